// Command gen writes docs/configuration.md and
// editors/vscode/schemas/nexus-config.schema.json from the config types
// (package configschema). go generate ./workspace runs it; the argument is
// the repository's root.
package main

import (
	"fmt"
	"os"

	"github.com/nexuscocreate/nexus/internal/configschema"
)

func main() {
	root := ".."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	if err := configschema.Write(root); err != nil {
		fmt.Fprintln(os.Stderr, "configschema:", err)
		os.Exit(1)
	}
}
