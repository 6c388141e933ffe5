package controllers

import (
	"github.com/roboco-sandbox/sandbox-controller/controllers/sandbox"
	"github.com/roboco-sandbox/sandbox-controller/internal/lease"
	"github.com/roboco-sandbox/sandbox-controller/internal/options"
)

// The names cmd/manager and the black-box suites use, kept on the face while
// their implementations live in the reconciler packages and internal/.

// Options are the operator's settings for every Sandbox (the manager's flags).
type Options = options.Options

// HostLeases says how manager replicas share the Docker hosts (Setup.Leases).
type HostLeases = lease.Config

// Finalizer holds a Sandbox until its containers are confirmed gone; SecretLabel
// marks the credentials Secrets.
const (
	Finalizer   = sandbox.Finalizer
	SecretLabel = sandbox.SecretLabel
)

var (
	// DefaultOptions are the manager's defaults.
	DefaultOptions = options.DefaultOptions
	// ImageFlag and KitchenSinkFlag name the manager's flags of an engine's images.
	ImageFlag       = options.ImageFlag
	KitchenSinkFlag = options.KitchenSinkFlag
)
