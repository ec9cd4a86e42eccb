package cli

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/spf13/cobra"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// logCommand is "nexus log": a message into the daemon's log.
func (e *env) logCommand() *cobra.Command {
	var (
		req   nexusv1.LogMessageRequest
		pairs []string
	)
	cmd := &cobra.Command{
		Use:   "log MESSAGE...",
		Short: "Write a message to the daemon's log",
		Args:  argsBetween(1, -1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch req.Level {
			case "debug", "info", "warn", "error":
			default:
				return usagef("--level %q: want debug, info, warn or error", req.Level)
			}
			ctxMap, err := parsePairs("context", pairs)
			if err != nil {
				return err
			}
			req.Message = strings.Join(args, " ")
			req.Context = ctxMap
			return e.call(cmd.Context(), func(ctx context.Context, c nexusv1.CoreFrameworkClient) error {
				resp, err := c.LogMessage(ctx, &req)
				if err != nil {
					return err
				}
				if !resp.GetSuccess() {
					return errors.New("the daemon did not log the message")
				}
				return e.output(resp, func(io.Writer) error { return nil })
			})
		},
	}
	cmd.Flags().StringVar(&req.Level, "level", "info", "`LEVEL`: debug, info, warn or error")
	cmd.Flags().StringVar(&req.AppId, "app", "", "app `ID` the message is about")
	cmd.Flags().StringVar(&req.TaskId, "task", "", "task `ID` the message is about")
	cmd.Flags().StringVar(&req.RequestId, "request", "", "request `ID` the message is about")
	cmd.Flags().StringArrayVar(&pairs, "context", nil, "context `KEY=VALUE` (repeatable)")
	return cmd
}

// parsePairs turns the KEY=VALUE values of a flag into a map; a VALUE
// may hold "=".
func parsePairs(flag string, pairs []string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, usagef("--%s %q: want KEY=VALUE", flag, p)
		}
		m[k] = v
	}
	return m, nil
}
