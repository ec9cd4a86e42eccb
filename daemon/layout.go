package daemon

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/workspace"
)

// layout is the workspace's layout of the daemon's files.
type layout struct{ workspace.Layout }

func newLayout(ws string) layout { return layout{workspace.NewLayout(ws)} }

// maxSocketPath keeps a unix socket path within sun_path (108 bytes with
// its terminating NUL).
const maxSocketPath = 107

// socketPath is .nexus/run/nexusd.sock, or, when the workspace path makes
// that too long, a per-workspace name in a private directory of the runtime
// dir (XDG_RUNTIME_DIR, else the temp dir).
func (l layout) socketPath() (string, error) {
	// The MCP gateway's socket beside it is the longest: "-mcp" more.
	longest := func(p string) int { return len(mcpSocketPath(p)) }
	p := filepath.Join(l.Run, "nexusd.sock")
	if longest(p) <= maxSocketPath {
		return p, nil
	}
	base := os.Getenv("XDG_RUNTIME_DIR")
	if base == "" {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "nexus-"+userName())
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := workspace.MakePrivateDir(dir); err != nil {
			return "", fmt.Errorf("socket directory: %w", err)
		}
	}
	if err := workspace.CheckPrivateDir(dir); err != nil {
		return "", fmt.Errorf("socket directory: %w", err)
	}
	sum := sha256.Sum256([]byte(l.Workspace))
	p = filepath.Join(dir, hex.EncodeToString(sum[:8])+".sock")
	if longest(p) > maxSocketPath {
		return "", fmt.Errorf("no socket path under %d bytes: set XDG_RUNTIME_DIR to a short directory", maxSocketPath+1)
	}
	return p, nil
}

func newToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// writeAdminToken makes a new admin token for this run (0600).
func (l layout) writeAdminToken() (string, error) {
	tok := newToken()
	if err := workspace.WriteFileAtomic(l.AdminToken, []byte(tok+"\n")); err != nil {
		return "", fmt.Errorf("admin token: %w", err)
	}
	return tok, nil
}

var tokenChars = regexp.MustCompile(`^[\x21-\x7e]+$`)

// appTokens returns the apps of the configuration with their tokens: the
// configured token, the content of tokenFile, or a token generated once into
// .nexus/run/apps/<id>.token and kept across restarts.
func (l layout) appTokens(cfgApps []workspace.AppConfig) (map[string]*access.App, map[string]string, error) {
	apps := map[string]*access.App{}
	tokens := map[string]string{}
	seen := map[string]string{}
	for _, a := range cfgApps {
		app := &access.App{ID: a.ID, Read: a.Grants.Definitions.Read, Write: a.Grants.Definitions.Write, Namespaces: a.Grants.Runtime, Network: a.Grants.Network}
		var tok string
		switch {
		case a.Token != "":
			tok = a.Token
		case a.TokenFile != "":
			data, err := os.ReadFile(l.Resolve(a.TokenFile))
			if err != nil {
				return nil, nil, fmt.Errorf("app %q: tokenFile: %w", a.ID, err)
			}
			tok = strings.TrimSpace(string(data))
		default:
			p := l.AppToken(a.ID)
			data, err := os.ReadFile(p)
			switch {
			case err == nil && strings.TrimSpace(string(data)) != "":
				tok = strings.TrimSpace(string(data))
			case err == nil || errors.Is(err, os.ErrNotExist):
				tok = newToken()
				if err := workspace.WriteFileAtomic(p, []byte(tok+"\n")); err != nil {
					return nil, nil, fmt.Errorf("app %q: %w", a.ID, err)
				}
			default:
				return nil, nil, fmt.Errorf("app %q: %w", a.ID, err)
			}
		}
		if len(tok) < 16 || !tokenChars.MatchString(tok) {
			return nil, nil, fmt.Errorf("app %q: its token must be at least 16 printable characters without spaces", a.ID)
		}
		if other, dup := seen[tok]; dup {
			return nil, nil, fmt.Errorf("apps %q and %q have the same token", other, a.ID)
		}
		seen[tok] = a.ID
		apps[a.ID] = app
		tokens[a.ID] = tok
	}
	return apps, tokens, nil
}
