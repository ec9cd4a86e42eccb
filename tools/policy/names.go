package policy

import (
	"cmp"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/nexuscocreate/nexus/tools"
)

// nameRule is one tool name pattern with its decision.
type nameRule struct {
	pattern string
	// server and tool are the parts of "server/tool"; for a bare name,
	// scoped is false and tool is the name (or "*").
	server, tool string
	scoped       bool
	decision     Decision // normalized
	raw          Decision // as configured
	spec         int
}

func newNameRule(pattern string, d Decision) nameRule {
	r := nameRule{pattern: pattern, decision: normalize(d), raw: d}
	if srv, tool, ok := strings.Cut(pattern, "/"); ok {
		r.scoped, r.server, r.tool = true, srv, tool
		if srv != "*" {
			r.spec++
		}
		if tool != "*" {
			r.spec++
		}
		return r
	}
	r.tool = pattern
	if pattern != "*" {
		r.spec = 2
	}
	return r
}

func (r *nameRule) matches(d *tools.Definition) bool {
	if !r.scoped {
		return r.tool == "*" || (d.ServerName == "" && d.Name == r.tool)
	}
	return d.ServerName != "" &&
		(r.server == "*" || r.server == d.ServerName) &&
		(r.tool == "*" || r.tool == d.Name)
}

// pickName returns the index of the rule of rs that decides for d, or -1:
// a deny if any matches, else the most specific match, ask before allow on
// a tie.
func pickName(rs []nameRule, d *tools.Definition) int {
	best := -1
	for i := range rs {
		r := &rs[i]
		if r.matches(d) && (best < 0 || betterRule(r.decision, r.spec, r.pattern, rs[best].decision, rs[best].spec, rs[best].pattern)) {
			best = i
		}
	}
	return best
}

// betterRule reports whether rule a (decision, specificity, pattern) beats
// rule b at the same level: deny beats the rest, then the more specific,
// then ask beats allow; the pattern breaks remaining ties so that the
// result does not depend on the order of the rules.
func betterRule(ad Decision, aspec int, apat string, bd Decision, bspec int, bpat string) bool {
	if (ad == Deny) != (bd == Deny) {
		return ad == Deny
	}
	if aspec != bspec {
		return aspec > bspec
	}
	if ad != bd {
		return ad == Ask
	}
	return apat < bpat
}

func checkNamePattern(p string) error {
	if p == "" {
		return errors.New("empty tool name")
	}
	parts := []string{p}
	if srv, tool, ok := strings.Cut(p, "/"); ok {
		parts = []string{srv, tool}
	}
	for _, part := range parts {
		if part == "" {
			return errors.New(`want "tool" or "server/tool"`)
		}
		if part != "*" && strings.Contains(part, "*") {
			return errors.New(`"*" can only stand for a whole tool or server name`)
		}
	}
	return nil
}

func sortedKeys[M ~map[K]V, K cmp.Ordered, V any](m M) []K {
	return slices.Sorted(maps.Keys(m))
}
