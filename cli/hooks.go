package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/internal/inert"
	"github.com/nexuscocreate/nexus/tools/hooks"
	"github.com/nexuscocreate/nexus/tools/policy"
	"github.com/nexuscocreate/nexus/workspace"
)

// hooksCommand is "nexus hooks": the hooks of .nexus/config.yaml and the
// person's approvals of them. It reads the workspace's files and needs no
// daemon: the daemon reads the approvals afresh before each run.
func (e *env) hooksCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hooks",
		Short: "List the hooks of .nexus/config.yaml and approve them, so that they run",
		Long: `List the hooks of .nexus/config.yaml (hooks.preToolUse, hooks.postToolUse,
hooks.userPromptSubmit) and approve them. A hook runs only once you have
approved it ("nexus hooks trust"): the approval is pinned to its event, match
and command line and to the content of every workspace file its command names
(kept in .nexus/hooks-trust.json), and a later change of any of them makes it
wait for approval again. Until then a preToolUse hook denies the calls it
matches and a userPromptSubmit hook blocks prompts, saying why.`,
		Args: cobra.ArbitraryArgs,
		RunE: needVerb,
	}
	cmd.AddCommand(e.hooksLsCommand(), e.hooksTrustCommand())
	return cmd
}

// openHooks loads the hooks of the workspace's configuration.
func (e *env) openHooks() (*hooks.Hooks, error) {
	start, err := e.startDir()
	if err != nil {
		return nil, err
	}
	ws, ok := findWorkspace(start)
	if !ok {
		ws = start
	}
	l := workspace.NewLayout(ws)
	cfg, err := workspace.LoadConfig(l.Config, nil)
	if err != nil {
		return nil, fmt.Errorf("invalid configuration:\n%w", err)
	}
	return hooks.New(hooks.Options{Workspace: ws, Config: cfg.Hooks, TrustFile: l.HooksTrust})
}

func (e *env) hooksLsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "List the hooks, whether each is approved, and what it runs",
		Args:  argsBetween(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := e.openHooks()
			if err != nil {
				return err
			}
			list := h.List()
			if e.json {
				return e.hooksJSON(list)
			}
			if len(list) == 0 {
				_, err := fmt.Fprintln(e.stdout, "no hooks: configure them under hooks in .nexus/config.yaml")
				return err
			}
			tw := newTable(e.stdout)
			fmt.Fprintln(tw, "NAME\tSTATE\tMATCH\tCOMMAND")
			for _, st := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", st.Name, hookState(st), inert.Line(orDash(st.Match)), commandWords(st.Command))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, st := range list {
				if st.Error != "" {
					fmt.Fprintf(e.stdout, "%s: %s\n", st.Name, inert.Line(st.Error))
				}
			}
			return nil
		},
	}
}

func hookState(st hooks.Status) string {
	switch {
	case st.Error != "":
		return "error"
	case st.Trusted:
		return "approved"
	}
	return "pending_approval"
}

// commandWords shows a hook's command as a shell would read it, each word
// inert (policy.ShellWord).
func commandWords(argv []string) string {
	words := make([]string, len(argv))
	for i, w := range argv {
		words[i] = policy.ShellWord(w)
	}
	return strings.Join(words, " ")
}

func (e *env) hooksJSON(list []hooks.Status) error {
	b, err := json.Marshal(struct {
		Hooks []hooks.Status `json:"hooks"`
	}{list})
	if err != nil {
		return err
	}
	return e.writeJSONLine(b)
}

func (e *env) hooksTrustCommand() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "trust NAME | --all",
		Short: "Show what a hook runs and approve it, so that it runs",
		Long: `Show what a hook runs — its event, match, command line, timeout and the
workspace files its command names, with their SHA-256 — and approve exactly
that (kept in .nexus/hooks-trust.json). NAME is as "nexus hooks ls" lists it,
such as preToolUse[0]. --all approves every hook waiting for approval, showing
each.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if all {
				return argsBetween(0, 0)(cmd, args)
			}
			return argsBetween(1, 1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := e.openHooks()
			if err != nil {
				return err
			}
			var todo []hooks.Status
			for _, st := range h.List() {
				if all && !st.Trusted || !all && st.Name == args[0] {
					todo = append(todo, st)
				}
			}
			if !all && len(todo) == 0 {
				return fmt.Errorf("%w: %q (nexus hooks ls lists them)", hooks.ErrUnknownHook, args[0])
			}
			var done []hooks.Status
			var errs []error
			for _, st := range todo {
				if !e.json {
					printHook(e.stdout, st)
				}
				if st.Trusted {
					done = append(done, st)
					if !e.json {
						fmt.Fprintf(e.stdout, "%s is already approved\n", st.Name)
					}
					continue
				}
				// The pin of what was shown: if the hook changed in
				// between, it is not approved.
				now, err := h.Trust(access.Person("cli"), st.Name, st.Pin)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				done = append(done, now)
				if !e.json {
					fmt.Fprintf(e.stdout, "approved %s\n", st.Name)
				}
			}
			if e.json {
				if err := e.hooksJSON(done); err != nil {
					return err
				}
			} else if all && len(todo) == 0 {
				fmt.Fprintln(e.stdout, "no hook waits for approval")
			}
			return errors.Join(errs...)
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "approve every hook waiting for approval")
	return cmd
}

// printHook shows what a hook runs, as the person approves it.
func printHook(w io.Writer, st hooks.Status) {
	fmt.Fprintf(w, "hook %s\n", st.Name)
	fmt.Fprintf(w, "  %-9s %s\n", "match:", inert.Line(orDash(st.Match)))
	fmt.Fprintf(w, "  %-9s %s\n", "command:", commandWords(st.Command))
	fmt.Fprintf(w, "  %-9s %s\n", "timeout:", st.Timeout)
	for _, f := range st.Files {
		fmt.Fprintf(w, "  %-9s %s sha256:%s\n", "file:", inert.Line(f.Path), f.SHA256)
	}
	if st.Error != "" {
		fmt.Fprintf(w, "  %-9s %s\n", "error:", inert.Line(st.Error))
	}
	fmt.Fprintf(w, "  %-9s %s\n", "pin:", st.Pin)
}
