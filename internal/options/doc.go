// Package options are the operator's settings for every Sandbox (the manager's
// flags), their one rulebook (Validate), and every method that reads them.
package options
