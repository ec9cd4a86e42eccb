package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// rtFlags are the flags of every "nexus rt" verb.
type rtFlags struct {
	app       string
	namespace string
}

// check reports a missing --app as a usage error.
func (f *rtFlags) check(cmd *cobra.Command) error {
	if f.app == "" {
		return usagef("%s needs --app ID: runtime values live in the namespace of an app", cmd.CommandPath())
	}
	return nil
}

// ns is the namespace the daemon reads: --namespace, else the app's own.
func (f *rtFlags) ns() string {
	if f.namespace != "" {
		return f.namespace
	}
	return f.app
}

// rtCommand is "nexus rt": runtime key/values of an app.
func (e *env) rtCommand() *cobra.Command {
	var f rtFlags
	cmd := &cobra.Command{
		Use:   "rt",
		Short: "Read and write the runtime values of an app",
		Long: `Read and write the runtime key/values of an app (--app, required). The
namespace is the app's own unless --namespace names another.`,
		Args: cobra.ArbitraryArgs,
		RunE: needVerb,
	}
	cmd.PersistentFlags().StringVar(&f.app, "app", "", "app `ID` whose values these are (required)")
	cmd.PersistentFlags().StringVar(&f.namespace, "namespace", "", "namespace `NS` (default: the app's own)")
	cmd.AddCommand(
		e.rtGetCommand(&f),
		e.rtSetCommand(&f),
		e.rtRmCommand(&f),
		e.rtLsCommand(&f),
	)
	return cmd
}

func (e *env) rtGetCommand(f *rtFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "get KEY",
		Short: "Print a runtime value",
		Args:  argsBetween(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(cmd); err != nil {
				return err
			}
			key := args[0]
			return e.call(cmd.Context(), func(ctx context.Context, c nexusv1.CoreFrameworkClient) error {
				resp, err := c.GetRuntimeValue(ctx, &nexusv1.GetRuntimeValueRequest{
					AppId:     f.app,
					Key:       key,
					Namespace: f.namespace,
				})
				if err != nil {
					return err
				}
				if !resp.GetFound() {
					return fmt.Errorf("key %q not found in namespace %q", key, f.ns())
				}
				return e.output(resp, func(w io.Writer) error {
					_, err := io.WriteString(w, resp.GetValue())
					return err
				})
			})
		},
	}
}

func (e *env) rtSetCommand(f *rtFlags) *cobra.Command {
	var ttl string
	cmd := &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Set a runtime value",
		Args:  argsBetween(2, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(cmd); err != nil {
				return err
			}
			var seconds int64
			if cmd.Flags().Changed("ttl") {
				s, err := parseTTL(ttl)
				if err != nil {
					return &usageError{msg: err.Error()}
				}
				seconds = s
			}
			return e.call(cmd.Context(), func(ctx context.Context, c nexusv1.CoreFrameworkClient) error {
				resp, err := c.SetRuntimeValue(ctx, &nexusv1.SetRuntimeValueRequest{
					AppId:      f.app,
					Key:        args[0],
					Value:      args[1],
					TtlSeconds: seconds,
					Namespace:  f.namespace,
				})
				if err != nil {
					return err
				}
				return e.output(resp, func(io.Writer) error { return nil })
			})
		},
	}
	cmd.Flags().StringVar(&ttl, "ttl", "", "expire the value after `DURATION` (Go syntax: 90s, 10m, 2h; at least 1s)")
	return cmd
}

// parseTTL parses a --ttl as a Go duration into whole seconds (a fraction of
// a second is dropped); it must be at least one second.
func parseTTL(s string) (int64, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("--ttl %q: not a duration like 90s, 10m or 2h", s)
	}
	if d < time.Second {
		return 0, fmt.Errorf("--ttl %s: must be at least 1s", s)
	}
	return int64(d / time.Second), nil
}

func (e *env) rtRmCommand(f *rtFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "rm KEY",
		Short: `Delete a runtime value and print "deleted" or "not found"`,
		Args:  argsBetween(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(cmd); err != nil {
				return err
			}
			return e.call(cmd.Context(), func(ctx context.Context, c nexusv1.CoreFrameworkClient) error {
				resp, err := c.DeleteRuntimeValue(ctx, &nexusv1.DeleteRuntimeValueRequest{
					AppId:     f.app,
					Key:       args[0],
					Namespace: f.namespace,
				})
				if err != nil {
					return err
				}
				return e.output(resp, func(w io.Writer) error {
					msg := "not found"
					if resp.GetDeleted() {
						msg = "deleted"
					}
					_, err := fmt.Fprintln(w, msg)
					return err
				})
			})
		},
	}
}

func (e *env) rtLsCommand(f *rtFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "ls [PREFIX]",
		Short: "List the keys of runtime values, one a line",
		Args:  argsBetween(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(cmd); err != nil {
				return err
			}
			var prefix string
			if len(args) == 1 {
				prefix = args[0]
			}
			return e.call(cmd.Context(), func(ctx context.Context, c nexusv1.CoreFrameworkClient) error {
				resp, err := c.ListRuntimeKeys(ctx, &nexusv1.ListRuntimeKeysRequest{
					AppId:     f.app,
					Prefix:    prefix,
					Namespace: f.namespace,
				})
				if err != nil {
					return err
				}
				return e.output(resp, func(w io.Writer) error {
					for _, k := range resp.GetKeys() {
						if _, err := fmt.Fprintln(w, k); err != nil {
							return err
						}
					}
					return nil
				})
			})
		},
	}
}
