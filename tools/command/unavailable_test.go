package command

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// The refusal of the sandboxed modes outside Linux, checked wherever the
// tests run: it is ErrSandboxUnavailable and names the platform.
func TestNoSandboxNamesThePlatform(t *testing.T) {
	for _, p := range [][2]string{{"darwin", "arm64"}, {"darwin", "amd64"}, {"windows", "amd64"}} {
		err := noSandbox(p[0], p[1])
		if !errors.Is(err, ErrSandboxUnavailable) {
			t.Errorf("%s/%s: %v is not ErrSandboxUnavailable", p[0], p[1], err)
		}
		if want := "no command sandbox on " + p[0] + "/" + p[1] + " yet"; !strings.Contains(err.Error(), want) {
			t.Errorf("%s/%s: %q does not say %q", p[0], p[1], err, want)
		}
	}
}

// TestSandboxOnPlatform: Linux has the sandbox; every other platform is
// refused by the same error Run gives, naming the platform.
func TestSandboxOnPlatform(t *testing.T) {
	err := SandboxOnPlatform()
	if runtime.GOOS == "linux" {
		if err != nil {
			t.Fatalf("linux: %v", err)
		}
		return
	}
	if !errors.Is(err, ErrSandboxUnavailable) || !strings.Contains(err.Error(), runtime.GOOS+"/"+runtime.GOARCH) {
		t.Fatalf("%s/%s: %v", runtime.GOOS, runtime.GOARCH, err)
	}
}
