package mcp

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/oauth2"

	"github.com/nexuscocreate/nexus/workspace"
)

// AuthDir returns the directory where the hub keeps the OAuth tokens of the
// servers the person signed in to: .nexus/mcp-auth (0700, a 0600 file a
// server), out of every tool call's reach like the rest of .nexus. The
// tokens are never in the definitions history and never logged.
func AuthDir(ws string) string {
	return workspace.NewLayout(absWorkspace(ws)).MCPAuth
}

// tokensVersion is the version of a token file's format.
const tokensVersion = 1

// signIn is what a token file holds: the tokens of one server, and what
// refreshing them takes.
type signIn struct {
	Version int    `json:"version"`
	Server  string `json:"server"`
	// ServerURL is the entry's url when the person signed in: the tokens are
	// sent to no other.
	ServerURL string `json:"serverUrl"`
	// Resource is the resource (RFC 8707) the tokens were issued for, sent
	// again when they are refreshed; Issuer the authorization server.
	Resource string `json:"resource,omitempty"`
	Issuer   string `json:"issuer,omitempty"`
	TokenURL string `json:"tokenEndpoint"`
	ClientID string `json:"clientId"`
	// ClientSecret is the secret of a client the hub registered itself
	// (dynamic client registration); a configured client's secret stays in
	// its environment variable and is not written here.
	ClientSecret string           `json:"clientSecret,omitempty"`
	AuthStyle    oauth2.AuthStyle `json:"authStyle"`
	// Scopes are the scopes granted.
	Scopes       []string  `json:"scopes,omitempty"`
	AccessToken  string    `json:"accessToken"`
	TokenType    string    `json:"tokenType,omitempty"`
	RefreshToken string    `json:"refreshToken,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	SignedIn     time.Time `json:"signedIn"`
}

func (s *signIn) token() *oauth2.Token {
	return &oauth2.Token{AccessToken: s.AccessToken, TokenType: s.TokenType, RefreshToken: s.RefreshToken, Expiry: s.Expiry}
}

// tokenStore keeps the sign-ins in a directory, a file a server.
type tokenStore struct {
	dir string
}

// path is the file of the server name; names are escaped so that none
// leaves the directory.
func (t tokenStore) path(name string) string {
	return filepath.Join(t.dir, url.PathEscape(name)+".json")
}

// load returns the sign-in kept for the server name, nil when there is
// none. A file that is not a sign-in is an error (signing in again
// replaces it).
func (t tokenStore) load(name string) (*signIn, error) {
	var s signIn
	found, err := workspace.ReadJSONFile(t.path(name), &s)
	switch {
	case err != nil:
		return nil, fmt.Errorf("MCP server %q: token file %s: %w", name, t.path(name), err)
	case !found:
		return nil, nil
	case s.Version != tokensVersion || s.Server != name || s.AccessToken == "":
		return nil, fmt.Errorf("MCP server %q: token file %s is not a sign-in of this server (version %d)", name, t.path(name), s.Version)
	}
	return &s, nil
}

// save writes the sign-in atomically, 0600 in a 0700 directory.
func (t tokenStore) save(s *signIn) error {
	if err := os.MkdirAll(t.dir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(t.dir, 0o700); err != nil {
		return err
	}
	s.Version = tokensVersion
	if err := workspace.WriteJSONAtomic(t.path(s.Server), s); err != nil {
		return fmt.Errorf("MCP server %q: saving its tokens: %w", s.Server, err)
	}
	return nil
}

// remove deletes the sign-in of the server name; it reports whether there
// was one.
func (t tokenStore) remove(name string) (bool, error) {
	err := os.Remove(t.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("MCP server %q: deleting its tokens: %w", name, err)
	}
	return true, nil
}
