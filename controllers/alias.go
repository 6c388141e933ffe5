package controllers

// The names cmd/manager and the black-box suites use, kept on the face while
// their implementations live in the reconciler packages and internal/.

// HostLeases says how manager replicas share the Docker hosts (Setup.Leases).
type HostLeases = Config
