package policy

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/nexuscocreate/nexus/workspace"
)

// FromConfig builds the rules of a workspace config: tools.policy gives
// Rules.Tools, apps[].grants.tools gives Rules.Apps, and the admin default
// is Allow (the config has no key for it); web.allowedDomains and the host
// of web.search.url give Rules.Web.
//
// A tools.policy key "execute_command:<pattern>" is a command rule rather
// than a tool name: "execute_command:git status: allow",
// "execute_command:rm **: deny". The rules are validated.
func FromConfig(cfg *workspace.Config) (Rules, error) {
	r := Rules{
		Tools: make(map[string]Decision),
		Apps:  make(map[string]AppRules, len(cfg.Apps)),
		Admin: Allow,
	}
	for _, key := range sortedKeys(cfg.Tools.Policy) {
		d := Decision(cfg.Tools.Policy[key])
		if pat, ok := strings.CutPrefix(key, executeCommand+":"); ok {
			r.Commands = append(r.Commands, CommandRule{Pattern: strings.TrimSpace(pat), Decision: d})
			continue
		}
		r.Tools[key] = d
	}
	for _, app := range cfg.Apps {
		g := app.Grants.Tools
		r.Apps[app.ID] = AppRules{Allow: slices.Clone(g.Allow), Ask: slices.Clone(g.Ask), Deny: slices.Clone(g.Deny)}
	}
	r.Web.AllowedDomains = slices.Clone(cfg.Web.AllowedDomains)
	if cfg.Web.Search.Provider != "" {
		if u, err := url.Parse(cfg.Web.Search.URL); err == nil {
			r.Web.SearchHost = u.Hostname()
		}
	}
	if err := r.Validate(); err != nil {
		return Rules{}, fmt.Errorf("tool policy: %w", err)
	}
	return r, nil
}
