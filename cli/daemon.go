package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/nexuscocreate/nexus/internal/proctree"
	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// daemonFile is where a running nexusd describes itself, relative to the
// workspace root.
const daemonFile = ".nexus/run/daemon.json"

// maxMessageSize bounds the messages sent to and received from the daemon.
const maxMessageSize = 64 << 20

// daemonInfo is the content of .nexus/run/daemon.json.
type daemonInfo struct {
	PID            int    `json:"pid"`
	Version        string `json:"version"`
	Workspace      string `json:"workspace"`
	GRPCAddress    string `json:"grpcAddress"`
	AdminTokenFile string `json:"adminTokenFile"`
}

// notRunningError says that no daemon answers for a workspace.
type notRunningError struct{ workspace string }

func (e *notRunningError) Error() string {
	return fmt.Sprintf("no nexusd is running for workspace %s (start one with: nexusd --workspace %s)", e.workspace, e.workspace)
}

// startDir is the directory the search for the workspace starts from:
// --workspace, else $NEXUS_WORKSPACE, else the current directory.
func (e *env) startDir() (string, error) {
	dir := e.workspace
	if dir == "" {
		dir = os.Getenv("NEXUS_WORKSPACE")
	}
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("finding the workspace: %w", err)
		}
		dir = wd
	}
	return filepath.Abs(dir)
}

// findWorkspace returns dir or the nearest of its parents that holds
// .nexus/run/daemon.json, the way git finds .git. dir must be absolute.
func findWorkspace(dir string) (string, bool) {
	for {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(daemonFile))); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// locateDaemon finds the workspace from e's flags and reads its daemon.json.
// It returns a *notRunningError when there is no daemon.json or its process
// is gone.
func (e *env) locateDaemon() (string, *daemonInfo, error) {
	start, err := e.startDir()
	if err != nil {
		return "", nil, err
	}
	ws, ok := findWorkspace(start)
	if !ok {
		return start, nil, &notRunningError{workspace: start}
	}
	name := filepath.Join(ws, filepath.FromSlash(daemonFile))
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return ws, nil, &notRunningError{workspace: ws} // removed by a stopping daemon
	}
	if err != nil {
		return ws, nil, err
	}
	var info daemonInfo
	if err := json.Unmarshal(b, &info); err != nil {
		return ws, nil, fmt.Errorf("%s: %w", name, err)
	}
	if info.GRPCAddress == "" {
		return ws, nil, fmt.Errorf("%s: no grpcAddress", name)
	}
	if info.PID <= 0 || !proctree.Exists(info.PID) {
		return ws, nil, &notRunningError{workspace: ws}
	}
	return ws, &info, nil
}

// readToken reads the admin token of a workspace.
func readToken(name string) (string, error) {
	if name == "" {
		return "", errors.New("daemon.json names no adminTokenFile")
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("reading the admin token: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("admin token file %s is empty", name)
	}
	return token, nil
}

// call connects to the daemon of the workspace with the admin token, runs fn
// with a client and closes the connection.
func (e *env) call(ctx context.Context, fn func(ctx context.Context, c nexusv1.CoreFrameworkClient) error) error {
	return e.dial(func(conn *grpc.ClientConn) error { return fn(ctx, nexusv1.NewCoreFrameworkClient(conn)) })
}

// callTools is call with a ToolManager client besides.
func (e *env) callTools(ctx context.Context, fn func(ctx context.Context, t nexusv1.ToolManagerClient, c nexusv1.CoreFrameworkClient) error) error {
	return e.dial(func(conn *grpc.ClientConn) error {
		return fn(ctx, nexusv1.NewToolManagerClient(conn), nexusv1.NewCoreFrameworkClient(conn))
	})
}

// dial connects to the daemon of the workspace with the admin token.
func (e *env) dial(fn func(conn *grpc.ClientConn) error) error {
	ws, info, err := e.locateDaemon()
	if err != nil {
		return err
	}
	token, err := readToken(info.AdminTokenFile)
	if err != nil {
		return err
	}
	conn, err := grpc.NewClient(info.GRPCAddress,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(bearerToken(token)),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(maxMessageSize),
			grpc.MaxCallSendMsgSize(maxMessageSize),
		),
		grpc.WithChainUnaryInterceptor(reportUnreachable(ws)),
		grpc.WithChainStreamInterceptor(reportUnreachableStream(ws)),
	)
	if err != nil {
		return fmt.Errorf("daemon address %q: %w", info.GRPCAddress, err)
	}
	defer conn.Close()
	return fn(conn)
}

// reportUnreachableStream is reportUnreachable for streams.
func reportUnreachableStream(ws string) grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if unreachable(err) {
			return nil, &notRunningError{workspace: ws}
		}
		return s, err
	}
}

// bearerToken sends "authorization: Bearer <token>" with every call.
type bearerToken string

func (t bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(t)}, nil
}

// RequireTransportSecurity is false: the daemon listens on a unix socket of
// the workspace or on a local port, without TLS.
func (bearerToken) RequireTransportSecurity() bool { return false }

// reportUnreachable turns a refused connection (a daemon.json left behind by a
// daemon that died, or a pid reused by another process) into a
// *notRunningError.
func reportUnreachable(ws string) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if unreachable(err) {
			return &notRunningError{workspace: ws}
		}
		return err
	}
}

// unreachable reports whether err is gRPC's failure to dial a socket nobody
// listens on (ECONNREFUSED) or that does not exist (ENOENT). gRPC keeps only
// the text of the dial error in the status. An UNAVAILABLE that the daemon
// itself returned (its Redis is down) is not that: gRPC's own says it was
// dialing.
func unreachable(err error) bool {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unavailable {
		return false
	}
	msg := st.Message()
	return strings.Contains(msg, "while dialing") && slices.ContainsFunc(noListener, func(e error) bool {
		return strings.Contains(msg, e.Error())
	})
}
