package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/nexuscocreate/nexus/internal/inert"
	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// defCommand is "nexus def": definition files and their history.
func (e *env) defCommand() *cobra.Command {
	var app string
	cmd := &cobra.Command{
		Use:   "def",
		Short: "Read and write definition files and their history",
		Long: `Read and write definition files and their history.

Paths are relative to the definitions root, or to the root of an app with --app.
Every write is one commit; --expect REV makes it fail unless the file was last
changed by REV ("none": unless the file does not exist).`,
		Args: cobra.ArbitraryArgs,
		RunE: needVerb,
	}
	cmd.PersistentFlags().StringVar(&app, "app", "", "make paths relative to the root of app `ID` (default: the definitions root)")
	cmd.AddCommand(
		e.defGetCommand(&app),
		e.defSetCommand(&app),
		e.defApplyCommand(&app),
		e.defRmCommand(&app),
		e.defRestoreCommand(&app),
		e.defLsCommand(&app),
		e.defLogCommand(&app),
		e.defDiffCommand(&app),
	)
	return cmd
}

// writeFlags are the flags of every verb that commits.
type writeFlags struct {
	message string
	expect  string
}

func (f *writeFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.message, "message", "m", "", "commit message `MSG`")
	cmd.Flags().StringVar(&f.expect, "expect", "", "fail unless the file was last changed by `REV` (\"none\": unless it does not exist)")
}

// printRevision is the human output of a write.
func printRevision(rev string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := fmt.Fprintln(w, rev)
		return err
	}
}

func (e *env) defGetCommand(app *string) *cobra.Command {
	var rev string
	cmd := &cobra.Command{
		Use:   "get PATH",
		Short: "Print a definition file",
		Args:  argsBetween(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.call(cmd.Context(), func(ctx context.Context, c nexusv1.CoreFrameworkClient) error {
				resp, err := c.GetDefinitionFileContent(ctx, &nexusv1.GetDefinitionFileContentRequest{
					AppId:    *app,
					Path:     args[0],
					Revision: rev,
				})
				if err != nil {
					return err
				}
				return e.output(resp, func(w io.Writer) error {
					_, err := io.WriteString(w, resp.GetContent())
					return err
				})
			})
		},
	}
	cmd.Flags().StringVar(&rev, "rev", "", "print the file as it was at revision `REV` (default: the latest)")
	return cmd
}

func (e *env) defSetCommand(app *string) *cobra.Command {
	var file string
	var wf writeFlags
	cmd := &cobra.Command{
		Use:   "set PATH",
		Short: "Write a definition file from --file or stdin and print the new revision",
		Args:  argsBetween(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.call(cmd.Context(), func(ctx context.Context, c nexusv1.CoreFrameworkClient) error {
				content, err := e.readText(file, "content")
				if err != nil {
					return err
				}
				resp, err := c.SetDefinitionFileContent(ctx, &nexusv1.SetDefinitionFileContentRequest{
					AppId:            *app,
					Path:             args[0],
					Content:          content,
					CommitMessage:    wf.message,
					ExpectedRevision: wf.expect,
				})
				if err != nil {
					return err
				}
				return e.output(resp, printRevision(resp.GetRevision()))
			})
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "read the content from file `F` (default and \"-\": stdin)")
	wf.register(cmd)
	return cmd
}

func (e *env) defApplyCommand(app *string) *cobra.Command {
	var wf writeFlags
	cmd := &cobra.Command{
		Use:   "apply PATH [DIFF_FILE|-]",
		Short: "Apply a unified diff to a definition file and print the new revision",
		Long: `Apply a unified diff (as git diff or diff -u prints it) of one file to a
definition file, read from DIFF_FILE or stdin, and print the new revision.`,
		Args: argsBetween(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var file string
			if len(args) == 2 {
				file = args[1]
			}
			return e.call(cmd.Context(), func(ctx context.Context, c nexusv1.CoreFrameworkClient) error {
				diff, err := e.readText(file, "diff")
				if err != nil {
					return err
				}
				resp, err := c.ApplyDefinitionDiff(ctx, &nexusv1.ApplyDefinitionDiffRequest{
					AppId:            *app,
					Path:             args[0],
					Diff:             diff,
					CommitMessage:    wf.message,
					ExpectedRevision: wf.expect,
				})
				if err != nil {
					return err
				}
				return e.output(resp, printRevision(resp.GetRevision()))
			})
		},
	}
	wf.register(cmd)
	return cmd
}

func (e *env) defRmCommand(app *string) *cobra.Command {
	var wf writeFlags
	cmd := &cobra.Command{
		Use:   "rm PATH",
		Short: "Delete a definition file and print the revision that deleted it",
		Args:  argsBetween(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.call(cmd.Context(), func(ctx context.Context, c nexusv1.CoreFrameworkClient) error {
				resp, err := c.DeleteDefinitionFile(ctx, &nexusv1.DeleteDefinitionFileRequest{
					AppId:            *app,
					Path:             args[0],
					CommitMessage:    wf.message,
					ExpectedRevision: wf.expect,
				})
				if err != nil {
					return err
				}
				return e.output(resp, printRevision(resp.GetRevision()))
			})
		},
	}
	wf.register(cmd)
	return cmd
}

func (e *env) defRestoreCommand(app *string) *cobra.Command {
	var wf writeFlags
	cmd := &cobra.Command{
		Use:   "restore PATH REV",
		Short: "Write back the content a definition file had at REV and print the new revision",
		Args:  argsBetween(2, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.call(cmd.Context(), func(ctx context.Context, c nexusv1.CoreFrameworkClient) error {
				resp, err := c.RestoreDefinitionFile(ctx, &nexusv1.RestoreDefinitionFileRequest{
					AppId:            *app,
					Path:             args[0],
					Revision:         args[1],
					CommitMessage:    wf.message,
					ExpectedRevision: wf.expect,
				})
				if err != nil {
					return err
				}
				return e.output(resp, printRevision(resp.GetRevision()))
			})
		},
	}
	wf.register(cmd)
	return cmd
}

func (e *env) defLsCommand(app *string) *cobra.Command {
	var recursive bool
	cmd := &cobra.Command{
		Use:   "ls [PATH]",
		Short: "List a directory of definition files",
		Args:  argsBetween(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var dir string
			if len(args) == 1 {
				dir = args[0]
			}
			return e.call(cmd.Context(), func(ctx context.Context, c nexusv1.CoreFrameworkClient) error {
				resp, err := c.ListDefinitionDirectory(ctx, &nexusv1.ListDefinitionDirectoryRequest{
					AppId:     *app,
					Path:      dir,
					Recursive: recursive,
				})
				if err != nil {
					return err
				}
				return e.output(resp, func(w io.Writer) error {
					if len(resp.GetEntries()) == 0 {
						return nil
					}
					tw := newTable(w)
					fmt.Fprintln(tw, "TYPE\tSIZE\tPATH")
					for _, ent := range resp.GetEntries() {
						typ, size := "file", fmt.Sprint(ent.GetSize())
						if ent.GetType() == nexusv1.EntryType_DIRECTORY {
							typ, size = "dir", "-"
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\n", typ, size, inert.Line(ent.GetPath()))
					}
					return tw.Flush()
				})
			})
		},
	}
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "list subdirectories too")
	return cmd
}

func (e *env) defLogCommand(app *string) *cobra.Command {
	var (
		limit int32
		all   bool
	)
	cmd := &cobra.Command{
		Use:   "log PATH",
		Short: "Print the history of a definition file, newest first",
		Long: `Print the history of a definition file, newest first: one page of --limit
entries, or all of them with --all. With --json, each page is one line.`,
		Args: argsBetween(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 0 {
				return usagef("--limit must not be negative")
			}
			return e.call(cmd.Context(), func(ctx context.Context, c nexusv1.CoreFrameworkClient) error {
				return e.history(ctx, c, &nexusv1.GetDefinitionFileHistoryRequest{
					AppId: *app,
					Path:  args[0],
					Limit: limit,
				}, all)
			})
		},
	}
	cmd.Flags().Int32Var(&limit, "limit", 0, "`N` entries a page (default: the daemon's, 100)")
	cmd.Flags().BoolVar(&all, "all", false, "follow the pages to the first commit")
	return cmd
}

// history prints the pages of the history of one path: the first, or all.
func (e *env) history(ctx context.Context, c nexusv1.CoreFrameworkClient, req *nexusv1.GetDefinitionFileHistoryRequest, all bool) error {
	tw := newTable(e.stdout)
	header := false
	for {
		resp, err := c.GetDefinitionFileHistory(ctx, req)
		if err != nil {
			return err
		}
		if e.json {
			if err := e.printJSON(resp); err != nil {
				return err
			}
		} else {
			for _, ent := range resp.GetEntries() {
				if !header {
					fmt.Fprintln(tw, "REVISION\tDATE\tAUTHOR\tCHANGE\tMESSAGE")
					header = true
				}
				// The author and message are an app's words: inert.
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n",
					inert.Line(shortRevision(ent.GetRevision())),
					ent.GetTimestamp().AsTime().Local().Format(time.RFC3339),
					inert.Line(orDash(ent.GetAuthor())),
					changeName(ent.GetChange()),
					inert.Line(firstLine(ent.GetMessage())))
			}
		}
		next := resp.GetNextPageToken()
		if !all || next == "" {
			break
		}
		if next == req.GetPageToken() {
			return errors.New("the daemon returned the same history page twice")
		}
		req.PageToken = next
	}
	return tw.Flush()
}

func (e *env) defDiffCommand(app *string) *cobra.Command {
	return &cobra.Command{
		Use:   "diff PATH FROM [TO]",
		Short: "Print the unified diff of a definition file between two revisions",
		Long: `Print the unified diff of a definition file from revision FROM to revision
TO (default: the latest), as git diff prints it.`,
		Args: argsBetween(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &nexusv1.GetDefinitionFileDiffRequest{
				AppId:        *app,
				Path:         args[0],
				FromRevision: args[1],
			}
			if len(args) == 3 {
				req.ToRevision = args[2]
			}
			return e.call(cmd.Context(), func(ctx context.Context, c nexusv1.CoreFrameworkClient) error {
				resp, err := c.GetDefinitionFileDiff(ctx, req)
				if err != nil {
					return err
				}
				return e.output(resp, func(w io.Writer) error {
					_, err := io.WriteString(w, resp.GetDiff())
					return err
				})
			})
		},
	}
}

// readText reads the text of a file, or of stdin when name is "" or "-".
// what names the text in errors.
func (e *env) readText(name, what string) (string, error) {
	var (
		b   []byte
		err error
	)
	if name == "" || name == "-" {
		name = "stdin"
		b, err = io.ReadAll(e.stdin)
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return "", fmt.Errorf("reading the %s: %w", what, err)
	}
	if !utf8.Valid(b) {
		return "", fmt.Errorf("the %s in %s is not UTF-8 text", what, name)
	}
	return string(b), nil
}

// shortRevision is the first 12 characters of a commit hash.
func shortRevision(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// changeName is the lower-case name of a change: added, modified, deleted.
func changeName(c nexusv1.ChangeType) string {
	if c == nexusv1.ChangeType_CHANGE_UNSPECIFIED {
		return "-"
	}
	return strings.ToLower(c.String())
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSuffix(line, "\r")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
