//go:build !linux

package command

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if plainChild() {
		os.Exit(0)
	}
	os.Exit(m.Run())
}
