package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// executeCommand is the core tool the command rules are about.
const executeCommand = "execute_command"

// maxNesting bounds how deep deny rules look into sh -c and eval strings;
// deeper than that, a command may match.
const maxNesting = 4

// match is how well a command matches a rule.
type match int

const (
	noMatch    match = iota
	maybeMatch       // it matches if words known only at run time come out right
	fullMatch
)

// isWrapper reports whether a program runs its arguments as a command:
// deny rules try every suffix of its arguments.
func isWrapper(name string) bool {
	switch name {
	case "sudo", "doas", "pkexec", "env", "command", "builtin", "exec", "nohup",
		"nice", "ionice", "time", "timeout", "stdbuf", "setsid", "xargs", "chrt",
		"taskset", "flock", "busybox", "strace", "ltrace", "nsenter", "unshare",
		"chroot", "watch":
		return true
	}
	return false
}

// isShell reports whether a program runs an argument as a shell script:
// deny rules parse its arguments.
func isShell(name string) bool {
	switch name {
	case "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh",
		"su", "watch":
		return true
	}
	return false
}

func isFindExec(option string) bool {
	switch option {
	case "-exec", "-execdir", "-ok", "-okdir":
		return true
	}
	return false
}

// isPrivilege, isDelete, isNetwork and isDownload name the programs the
// ICERC risk assessment flags.
func isPrivilege(name string) bool {
	switch name {
	case "sudo", "doas", "su", "pkexec":
		return true
	}
	return false
}

func isDelete(name string) bool {
	switch name {
	case "rm", "rmdir", "shred", "unlink", "dd", "truncate", "mkfs", "wipefs":
		return true
	}
	return strings.HasPrefix(name, "mkfs.")
}

func isNetwork(name string) bool {
	switch name {
	case "curl", "wget", "ssh", "scp", "nc", "ncat", "netcat":
		return true
	}
	return false
}

func isDownload(name string) bool { return name == "curl" || name == "wget" }

// Risk factors of a command, for the ICERC record.
const (
	factorParse       = "the command does not parse"
	factorList        = "runs several commands (; && || or new lines)"
	factorPipe        = "pipes output into another command"
	factorRedirect    = "redirects input or output: may read or write files anywhere"
	factorBackground  = "runs in the background"
	factorSubshell    = "runs a subshell or command group"
	factorCmdSubst    = "runs commands inside command substitution"
	factorProcSubst   = "uses process substitution"
	factorExpansion   = "expands variables or arithmetic: values known only when it runs"
	factorPattern     = "has glob, tilde, brace or $'…' words: expanded only when it runs"
	factorControl     = "has control flow (if, for, while, case, functions)"
	factorAssign      = "sets variables in front of a command"
	factorPrivilege   = "runs with elevated privileges (sudo, doas, su, pkexec)"
	factorDelete      = "deletes or overwrites files (rm, rmdir, shred, unlink, dd, truncate, mkfs)"
	factorNested      = "runs a nested shell or eval: the inner script is harder to read"
	factorDownloadRun = "downloads code and runs it (curl or wget with a shell)"
	factorNetwork     = "reaches the network (curl, wget, ssh, scp, nc)"
)

// word is one word of a simple command.
type word struct {
	value string
	// known is true when the shell gives the word exactly value: a plain or
	// quoted literal without expansion, glob, tilde or brace.
	known bool
}

// simpleCommand is one simple command of a program.
type simpleCommand struct {
	argv []word
	text string
}

// command is the execute_command call the rules look at.
type command struct {
	// text is the command line, or the argv with shell quoting.
	text string
	cwd  string
	// env holds the names of the variables the call's env sets, sorted.
	env []string
	// err is set when the arguments cannot be read or the line does not
	// parse; the fields below are then empty.
	err error
	// simple holds every simple command anywhere in the program.
	simple []simpleCommand
	// plain is the argv when the program is exactly one plain simple
	// command (see the package doc), nil otherwise.
	plain []string
	// factors are the risk factors, in the order found.
	factors []string
}

// parseArgs reads the execute_command arguments {command | argv, cwd, env}.
func parseArgs(raw json.RawMessage) *command {
	var a struct {
		Command *string                    `json:"command"`
		Argv    []string                   `json:"argv"`
		Cwd     string                     `json:"cwd"`
		Env     map[string]json.RawMessage `json:"env"`
	}
	c := &command{}
	if err := json.Unmarshal(raw, &a); err != nil {
		c.err = fmt.Errorf("cannot read the execute_command arguments: %v", err)
		return c
	}
	c.cwd = a.Cwd
	c.env = sortedKeys(a.Env)
	switch {
	case a.Command != nil && a.Argv != nil:
		c.err = errors.New("execute_command has both command and argv")
	case a.Command != nil:
		c.parseLine(*a.Command)
	case len(a.Argv) > 0:
		c.setArgv(a.Argv)
	default:
		c.err = errors.New("execute_command has neither command nor argv")
	}
	return c
}

func (c *command) add(factor string) {
	if !slices.Contains(c.factors, factor) {
		c.factors = append(c.factors, factor)
	}
}

func parseScript(s string) (*syntax.File, error) {
	return syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(s), "")
}

func (c *command) parseLine(line string) {
	c.text = strings.TrimSpace(line)
	f, err := parseScript(line)
	if err != nil {
		c.err = fmt.Errorf("cannot parse the command (%v)", err)
		c.add(factorParse)
		return
	}
	c.simple = simpleCommands(f, c.add)
	c.plain = plainArgv(f)
	c.flagPrograms()
}

func (c *command) setArgv(argv []string) {
	ws := make([]word, len(argv))
	for i, a := range argv {
		ws[i] = word{value: a, known: true}
	}
	c.text = shellJoin(argv)
	c.simple = []simpleCommand{{argv: ws, text: c.text}}
	c.plain = slices.Clone(argv)
	c.flagPrograms()
}

// flagPrograms adds the risk factors that come from the programs run.
func (c *command) flagPrograms() {
	var download, shell bool
	for _, s := range c.simple {
		if len(s.argv) == 0 || !s.argv[0].known {
			continue
		}
		wrapper := isWrapper(path.Base(s.argv[0].value))
		for i, w := range s.argv {
			if i > 0 && !wrapper {
				break
			}
			if !w.known {
				continue
			}
			name := path.Base(w.value)
			switch {
			case isPrivilege(name):
				c.add(factorPrivilege)
			case isDelete(name):
				c.add(factorDelete)
			}
			if isShell(name) || name == "eval" {
				shell = true
				c.add(factorNested)
			}
			if isNetwork(name) {
				c.add(factorNetwork)
			}
			download = download || isDownload(name)
		}
	}
	if download && shell {
		c.add(factorDownloadRun)
	}
	if len(c.env) > 0 {
		c.add("sets environment variables: " + strings.Join(c.env, ", "))
	}
}

// simpleCommands returns every simple command in f, anywhere, and reports
// the risk factors of f's structure to add (which may be a no-op).
func simpleCommands(f *syntax.File, add func(string)) []simpleCommand {
	if len(f.Stmts) > 1 {
		add(factorList)
	}
	var out []simpleCommand
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			if len(n.Redirs) > 0 {
				add(factorRedirect)
			}
			if n.Background || n.Coprocess || n.Disown {
				add(factorBackground)
			}
		case *syntax.BinaryCmd:
			if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
				add(factorPipe)
			} else {
				add(factorList)
			}
		case *syntax.Subshell, *syntax.Block:
			add(factorSubshell)
		case *syntax.CmdSubst:
			add(factorCmdSubst)
		case *syntax.ProcSubst:
			add(factorProcSubst)
		case *syntax.ParamExp, *syntax.ArithmExp:
			add(factorExpansion)
		case *syntax.IfClause, *syntax.WhileClause, *syntax.ForClause, *syntax.CaseClause,
			*syntax.FuncDecl, *syntax.CoprocClause:
			add(factorControl)
		case *syntax.CallExpr:
			if len(n.Assigns) > 0 {
				add(factorAssign)
			}
			if len(n.Args) == 0 {
				break
			}
			s := simpleCommand{argv: make([]word, len(n.Args)), text: printNode(n)}
			for i, w := range n.Args {
				v, known, pattern := literal(w)
				s.argv[i] = word{value: v, known: known}
				if pattern {
					add(factorPattern)
				}
			}
			out = append(out, s)
		}
		return true
	})
	return out
}

// plainArgv returns the argv of f when f is exactly one plain simple
// command, nil otherwise.
func plainArgv(f *syntax.File) []string {
	if len(f.Stmts) != 1 {
		return nil
	}
	s := f.Stmts[0]
	if s.Negated || s.Background || s.Coprocess || s.Disown || len(s.Redirs) > 0 {
		return nil
	}
	call, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(call.Args) == 0 {
		return nil
	}
	argv := make([]string, len(call.Args))
	for i, w := range call.Args {
		v, known, _ := literal(w)
		if !known {
			return nil
		}
		argv[i] = v
	}
	return argv
}

// literal returns the value the shell gives w, and whether that value is
// known without running anything; pattern is set when w has a glob, tilde,
// brace or $'…' part.
func literal(w *syntax.Word) (value string, known, pattern bool) {
	var b strings.Builder
	known = true
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			v := p.Value
			for j := 0; j < len(v); j++ {
				switch ch := v[j]; {
				case ch == '\\' && j+1 < len(v):
					j++
					b.WriteByte(v[j])
				case strings.IndexByte("*?[{}~", ch) >= 0:
					known, pattern = false, true
				default:
					b.WriteByte(ch)
				}
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				known, pattern = false, true
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				known = false
			}
			for _, q := range p.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok {
					known = false
					continue
				}
				v := lit.Value
				for j := 0; j < len(v); j++ {
					if v[j] == '\\' && j+1 < len(v) && strings.IndexByte("$`\"\\\n", v[j+1]) >= 0 {
						j++
						if v[j] == '\n' {
							continue
						}
					}
					b.WriteByte(v[j])
				}
			}
		case *syntax.ExtGlob, *syntax.BraceExp:
			known, pattern = false, true
		default:
			known = false
		}
	}
	if !known {
		return "", false, pattern
	}
	return b.String(), true, false
}

func printNode(n syntax.Node) string {
	var b strings.Builder
	if err := syntax.NewPrinter(syntax.SingleLine(true)).Print(&b, n); err != nil {
		return fmt.Sprintf("%T", n)
	}
	return strings.TrimSpace(b.String())
}

// commandRule is a compiled CommandRule.
type commandRule struct {
	pattern string
	// words are the pattern's words without a final "**"; rest is true
	// when there was one.
	words []string
	rest  bool
	// valid is false for a malformed pattern, which never matches.
	valid    bool
	decision Decision // normalized
	raw      Decision // as configured
	spec     int
}

func compileCommandRule(c CommandRule) commandRule {
	words := strings.Fields(c.Pattern)
	r := commandRule{
		pattern:  strings.Join(words, " "),
		valid:    checkCommandPattern(c.Pattern) == nil,
		decision: normalize(c.Decision),
		raw:      c.Decision,
	}
	if n := len(words); n > 0 && words[n-1] == "**" {
		r.rest, words = true, words[:n-1]
	}
	r.words = words
	for _, w := range words {
		if w != "*" {
			r.spec += 2
		}
	}
	if !r.rest {
		r.spec++
	}
	return r
}

func checkCommandPattern(p string) error {
	words := strings.Fields(p)
	if len(words) == 0 {
		return errors.New("empty pattern")
	}
	for i, w := range words {
		switch {
		case w == "**" && i != len(words)-1:
			return errors.New(`"**" can only be the last word`)
		case w != "*" && w != "**" && strings.Contains(w, "*"):
			return errors.New(`"*" and "**" can only stand for whole words`)
		}
	}
	return nil
}

// direct matches argv against r word for word. deny also lets the first
// word match by its base name. A word whose value is known only at run time
// may expand to any number of words, so from the first such word on the
// result is at best maybeMatch.
func direct(r commandRule, argv []word, deny bool) match {
	n := len(r.words)
	k := slices.IndexFunc(argv, func(w word) bool { return !w.known })
	if k < 0 {
		k = len(argv)
	}
	for i := 0; i < n && i < k; i++ {
		if !wordMatches(r.words[i], argv[i].value, deny && i == 0) {
			return noMatch
		}
	}
	switch {
	case k == len(argv):
		if len(argv) < n || (!r.rest && len(argv) > n) {
			return noMatch
		}
		return fullMatch
	case k >= n && r.rest:
		return fullMatch
	case k > n:
		// Known words beyond a pattern without "**".
		return noMatch
	}
	return maybeMatch
}

func wordMatches(pattern, value string, base bool) bool {
	return pattern == "*" || pattern == value ||
		(base && !strings.Contains(pattern, "/") && path.Base(value) == pattern)
}

// deny reports how well the program matches the deny rule r, with the
// simple command that matched best.
func (c *command) deny(r commandRule) (match, string) {
	best, text := noMatch, ""
	if !r.valid || c.err != nil {
		return best, text
	}
	for _, s := range c.simple {
		if m := denyArgv(r, s.argv, 0); m > best {
			best, text = m, s.text
			if m == fullMatch {
				break
			}
		}
	}
	return best, text
}

// denyArgv matches one simple command against a deny rule, looking through
// wrappers, find -exec, shells and eval.
func denyArgv(r commandRule, argv []word, depth int) match {
	best := direct(r, argv, true)
	consider := func(m match) { best = max(best, m) }
	// A word known only at run time may expand to nothing or to a command
	// prefix ("$SUDO rm"): what follows it may be the command.
	for i, w := range argv {
		if !w.known && i+1 < len(argv) {
			consider(min(direct(r, argv[i+1:], true), maybeMatch))
		}
	}
	if best == fullMatch || len(argv) == 0 || !argv[0].known {
		return best
	}
	switch name := path.Base(argv[0].value); {
	case isWrapper(name):
		for i := 1; i < len(argv) && best < fullMatch; i++ {
			consider(direct(r, argv[i:], true))
			consider(nested(r, argv[i:], depth))
		}
	case name == "find":
		for i := 1; i+1 < len(argv) && best < fullMatch; i++ {
			if argv[i].known && isFindExec(argv[i].value) {
				consider(direct(r, argv[i+1:], true))
				consider(nested(r, argv[i+1:], depth))
			}
		}
	}
	if best < fullMatch {
		consider(nested(r, argv, depth))
	}
	return best
}

// nested matches the scripts a shell or eval in argv[0] would run.
func nested(r commandRule, argv []word, depth int) match {
	if len(argv) == 0 || !argv[0].known {
		return noMatch
	}
	name := path.Base(argv[0].value)
	if !isShell(name) && name != "eval" {
		return noMatch
	}
	if depth >= maxNesting {
		return maybeMatch
	}
	if name == "eval" {
		parts := make([]string, 0, len(argv)-1)
		for _, w := range argv[1:] {
			if !w.known {
				return maybeMatch
			}
			parts = append(parts, w.value)
		}
		return scriptMatch(r, strings.Join(parts, " "), depth+1)
	}
	best := noMatch
	for _, w := range argv[1:] {
		switch {
		case !w.known:
			best = max(best, maybeMatch)
		case w.value != "" && !strings.HasPrefix(w.value, "-"):
			best = max(best, scriptMatch(r, w.value, depth+1))
		}
		if best == fullMatch {
			break
		}
	}
	return best
}

func scriptMatch(r commandRule, script string, depth int) match {
	f, err := parseScript(script)
	if err != nil {
		return maybeMatch
	}
	best := noMatch
	for _, s := range simpleCommands(f, func(string) {}) {
		if best = max(best, denyArgv(r, s.argv, depth)); best == fullMatch {
			break
		}
	}
	return best
}

// pickAllow returns the allow or ask rule that decides for a plain
// command: the most specific match, ask before allow on a tie.
func (c *command) pickAllow(rs []commandRule) (commandRule, bool) {
	if c.err != nil || c.plain == nil || len(c.env) > 0 {
		return commandRule{}, false
	}
	argv := make([]word, len(c.plain))
	for i, v := range c.plain {
		argv[i] = word{value: v, known: true}
	}
	var best commandRule
	found := false
	for _, r := range rs {
		if r.valid && direct(r, argv, false) == fullMatch &&
			(!found || betterRule(r.decision, r.spec, r.pattern, best.decision, best.spec, best.pattern)) {
			best, found = r, true
		}
	}
	return best, found
}

// shellJoin renders argv as a shell command line.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_@%+=:,./-", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
