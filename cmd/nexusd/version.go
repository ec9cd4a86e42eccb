package main

import nexusversion "github.com/nexuscocreate/nexus/internal/version"

// A nexusd built without -ldflags -X main.version (go install …@v1.2.3)
// reports the module version the go command stamped, not "dev".
func init() {
	version = nexusversion.Of(version)
}
