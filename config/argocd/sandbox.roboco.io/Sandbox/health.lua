-- Argo CD health check for sandbox.roboco.io/Sandbox. Install it in argocd-cm
-- under resource.customizations.health.sandbox.roboco.io_Sandbox (see
-- docs/api.md, GitOps tools).
-- Healthy: Ready for the current generation. Degraded: Stalled (a change is
-- needed), or a failure the controller keeps retrying (the message says which).
-- Progressing: not yet observed, provisioning, or being deleted.
local hs = {}
local gen = obj.metadata.generation or 0
if obj.metadata.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  hs.message = "Being deleted: its containers and Secret are torn down"
  return hs
end
if obj.status == nil or obj.status.observedGeneration ~= gen then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to observe generation " .. gen
  return hs
end
local conds = {}
if obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    conds[c.type] = c
  end
end
local function current(c)
  return c ~= nil and c.status == "True" and c.observedGeneration == gen
end
if current(conds["Stalled"]) then
  hs.status = "Degraded"
  hs.message = conds["Stalled"].reason .. ": " .. conds["Stalled"].message
  return hs
end
local ready = conds["Ready"]
if current(ready) then
  hs.status = "Healthy"
  hs.message = ready.message
  return hs
end
if ready == nil or ready.reason == "Provisioning" or ready.reason == "Deleting" then
  hs.status = "Progressing"
  hs.message = ready ~= nil and ready.message or "Waiting for the first status"
  return hs
end
hs.status = "Degraded"
hs.message = ready.reason .. ": " .. ready.message
return hs
