{{/* The prefix of every object's name: the release name, with the chart's name when it does not hold it. */}}
{{- define "sandbox-controller.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The manager's service account. */}}
{{- define "sandbox-controller.serviceAccount" -}}
{{ include "sandbox-controller.fullname" . }}-controller-manager
{{- end -}}

{{/* Labels of every object: config/default's, and Helm's own. */}}
{{- define "sandbox-controller.labels" -}}
app.kubernetes.io/name: sandbox-controller
app.kubernetes.io/part-of: sandbox-controller
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The manager Pod's labels, which its Deployment and Service select. */}}
{{- define "sandbox-controller.selectorLabels" -}}
app.kubernetes.io/component: manager
app.kubernetes.io/name: sandbox-controller
{{- end -}}

{{/* A subject list of the manager's service account. */}}
{{- define "sandbox-controller.subjects" -}}
subjects:
- kind: ServiceAccount
  name: {{ include "sandbox-controller.serviceAccount" . }}
  namespace: {{ .Release.Namespace }}
{{- end -}}
