package core

import (
	"encoding/json"

	"github.com/nexuscocreate/nexus/tools"
)

// touchesPath is the Touches of write_file and edit_file: the one file
// their path argument names, as the handler will write it (symlinks
// inside the workspace resolved, since the file they lead to is what
// changes). Invalid arguments touch nothing: the handler refuses them.
func (t *Tools) touchesPath(raw json.RawMessage) tools.Touch {
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(raw, &a) != nil {
		return tools.Touch{}
	}
	p, err := cleanPath(a.Path, false)
	if err != nil {
		return tools.Touch{}
	}
	canon, err := t.canonical(p)
	if err != nil || canon == "" {
		return tools.Touch{}
	}
	return tools.Touch{Paths: []string{canon}}
}

// touchesAll is the Touches of execute_command: a command may change any
// file of the workspace.
func touchesAll(json.RawMessage) tools.Touch { return tools.Touch{All: true} }
