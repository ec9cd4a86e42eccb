// Package version tells which version of Nexus a binary is: the one set
// at build time with -ldflags -X (make build, make dist), else the module
// version the go command stamps into the build info (go install
// github.com/nexuscocreate/nexus/cmd/nexusd@v1.2.3 gives v1.2.3; a go
// build in a git checkout, a pseudo-version naming the commit), else
// "dev". Start with [Of].
package version

import "runtime/debug"

// Dev is the version of a binary built with none.
const Dev = "dev"

// Of is set, the version given with -ldflags -X, unless that is empty or
// Dev: then the main module's version from the build info, when it has one.
func Of(set string) string {
	bi, _ := debug.ReadBuildInfo()
	return of(set, bi)
}

func of(set string, bi *debug.BuildInfo) string {
	if set != "" && set != Dev {
		return set
	}
	// "(devel)" is what the go command says when it knows no version.
	if bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return Dev
}
