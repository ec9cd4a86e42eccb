package policy

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nexuscocreate/nexus/tools"
)

// SamplingTool is the tool of an MCP server's sampling request
// (sampling/createMessage): the McpHub makes each request a call of it,
// named SERVER/mcp_sampling, by "mcp:SERVER", so that it is validated,
// decided here (medium risk: ask by default; "always" remembered per
// server), audited and shown like any call. No one can call it by name.
const SamplingTool = "mcp_sampling"

// SamplingClient is the profile of a sampling request that the MCP client
// that made the call answers with its own model (mcp.sampling.client).
const SamplingClient = "client"

// SamplingArgs are the arguments of a call of SamplingTool: what the
// person is shown before the model is asked.
type SamplingArgs struct {
	// Profile is the llm profile that answers, Provider and Model its own,
	// and Why how it was chosen ("configured", or the server's hint).
	Profile  string `json:"profile"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Why      string `json:"why,omitempty"`
	// BaseURL is the profile's endpoint, when it is not the provider's own.
	BaseURL      string            `json:"baseURL,omitempty"`
	SystemPrompt string            `json:"systemPrompt,omitempty"`
	Messages     []SamplingMessage `json:"messages"`
	MaxTokens    int               `json:"maxTokens"`
	Temperature  *float64          `json:"temperature,omitempty"`
	Stop         []string          `json:"stopSequences,omitempty"`
}

// SamplingMessage is one message of a sampling request: its text, or an
// image described by its type and size.
type SamplingMessage struct {
	Role  string `json:"role"`
	Text  string `json:"text,omitempty"`
	Image string `json:"image,omitempty"`
}

// SamplingSchema is the input schema of SamplingTool.
var SamplingSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"profile":{"type":"string"},"provider":{"type":"string"},"model":{"type":"string"},"why":{"type":"string"},"baseURL":{"type":"string"},` +
	`"systemPrompt":{"type":"string"},` +
	`"messages":{"type":"array","items":{"type":"object","properties":{"role":{"enum":["user","assistant"]},"text":{"type":"string"},"image":{"type":"string"}},"required":["role"]}},` +
	`"maxTokens":{"type":"integer","minimum":1},"temperature":{"type":"number"},"stopSequences":{"type":"array","items":{"type":"string"}}},` +
	`"required":["profile","model","messages","maxTokens"]}`)

// isSampling reports whether d is an MCP server's SamplingTool.
func isSampling(d tools.Definition) bool { return d.Name == SamplingTool && d.ServerName != "" }

// renderSampling is the command of a sampling request: the model and the
// messages, each cut.
func renderSampling(req Request) (string, bool) {
	var a SamplingArgs
	if json.Unmarshal(req.Args, &a) != nil {
		return "", false
	}
	var b strings.Builder
	if a.Profile == SamplingClient {
		fmt.Fprintf(&b, "ask the model of the MCP client that made the call for at most %d tokens", a.MaxTokens)
	} else {
		fmt.Fprintf(&b, "ask model %s (profile %s, %s) for at most %d tokens", a.Model, a.Profile, a.Provider, a.MaxTokens)
	}
	if a.Why != "" && a.Why != "configured" {
		fmt.Fprintf(&b, "; chosen by %s", a.Why)
	}
	if a.SystemPrompt != "" {
		fmt.Fprintf(&b, "\nsystem: %s", cut(a.SystemPrompt))
	}
	const shown = 6
	for i, m := range a.Messages {
		if len(a.Messages) > shown && i == shown/2 {
			fmt.Fprintf(&b, "\n… %d more messages …", len(a.Messages)-shown)
		}
		if len(a.Messages) > shown && i >= shown/2 && i < len(a.Messages)-shown/2 {
			continue
		}
		if m.Image != "" {
			fmt.Fprintf(&b, "\n%s: [image %s]", m.Role, m.Image)
		} else {
			fmt.Fprintf(&b, "\n%s: %s", m.Role, cut(m.Text))
		}
	}
	return b.String(), true
}

// samplingRisk is the risk of a sampling request: where the messages go.
func samplingRisk(req Request, r RiskAssessment) RiskAssessment {
	var a SamplingArgs
	_ = json.Unmarshal(req.Args, &a)
	if a.Profile == SamplingClient {
		r.Scope = "the model of the MCP client that made the call"
		r.Details = append(r.Details, "sends the messages above to the MCP client that made the call; its model answers",
			fmt.Sprintf("the model's reply goes to MCP server %q, which asked for it", req.Tool.ServerName))
		return r
	}
	r.Scope = fmt.Sprintf("model %s of llm profile %s", a.Model, a.Profile)
	where := "provider " + a.Provider
	if a.BaseURL != "" {
		where += " at " + a.BaseURL
	}
	r.Details = append(r.Details,
		fmt.Sprintf("sends the messages above to %s, at the profile's cost", where),
		fmt.Sprintf("the model's reply goes to MCP server %q, which asked for it", req.Tool.ServerName))
	return r
}
