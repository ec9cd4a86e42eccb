//go:build !windows

package core

// systemEnv are the variables every command gets beside
// tools.envAllowlist: none outside Windows.
var systemEnv []string
