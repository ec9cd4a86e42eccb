package localllm_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/integration/localllm"
)

func TestStart(t *testing.T) {
	base := localllm.Start(t)
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":5}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	t.Logf("%d %s", resp.StatusCode, b)
}
