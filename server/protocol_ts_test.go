package server

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/agent"
	"github.com/nexuscocreate/nexus/checkpoints"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/hooks"
	"github.com/nexuscocreate/nexus/tools/mcp"
)

// protocolTS is the extension's protocol module, the one TypeScript copy of
// the editor protocol's names and shapes.
const protocolTS = "../editors/vscode/src/protocol.ts"

// TestProtocolTS checks editors/vscode/src/protocol.ts against this
// package: every method of the method table, every notification and request
// is named there, and the TypeScript interfaces have the JSON fields of the
// Go structs they mirror. When it fails, mend protocol.ts.
func TestProtocolTS(t *testing.T) {
	raw, err := os.ReadFile(protocolTS)
	if err != nil {
		t.Fatal(err)
	}
	ts := string(raw)

	s := &Server{}
	s.opts.Agent = new(agent.Service) // the table with the agent's methods too
	names := []string{requestPermission, requestMcpTrust, requestHookTrust, showDocument, requestElicitation}
	for name := range s.methodTable() {
		names = append(names, name)
	}
	names = append(names, notificationNames...)
	for _, name := range names {
		if !strings.Contains(ts, "'"+name+"'") {
			t.Errorf("protocol.ts does not name %q", name)
		}
	}

	for _, c := range []struct {
		iface string
		v     any
	}{
		{"ToolCall", toolCallWire{}},
		{"PermissionParams", permissionParams{}},
		{"Icerc", tools.ICERC{}},
		{"RiskAssessment", tools.RiskAssessment{}},
		{"CallError", tools.CallError{}},
		{"Progress", tools.Progress{}},
		{"McpServer", mcpServerWire{}},
		{"McpTrustRequest", mcpTrustRequest{}},
		{"HookStatus", hooks.Status{}},
		{"PinnedFile", hooks.PinnedFile{}},
		{"HooksTrustParams", hooksTrustParams{}},
		{"HooksTrustResult", hooksTrustResult{}},
		{"HooksListResult", hooksListResult{}},
		{"HookTrustRequest", hookTrustRequest{}},
		{"ElicitationParams", elicitationParams{}},
		{"ElicitationResult", elicitationResult{}},
		{"DefinitionChanged", definitionChangeWire{}},
		{"RuntimeChanged", runtimeChangeWire{}},
		{"LogEntry", logWire{}},
		{"AgentUpdateParams", agentUpdateParams{}},
		{"DaemonInfo", Info{}},
		{"DefGetParams", defGetParams{}},
		{"DefGetResult", defGetResult{}},
		{"DefSetParams", defSetParams{}},
		{"DefApplyDiffParams", defApplyDiffParams{}},
		{"RevisionContentResult", revisionContentResult{}},
		{"DefDeleteParams", defDeleteParams{}},
		{"DefRestoreParams", defRestoreParams{}},
		{"DefListParams", defListParams{}},
		{"DefEntry", defEntry{}},
		{"DefHistoryParams", defHistoryParams{}},
		{"HistoryEntry", historyEntry{}},
		{"DefHistoryResult", defHistoryResult{}},
		{"DefDiffParams", defDiffParams{}},
		{"RtKeyParams", rtKeyParams{}},
		{"RtGetResult", rtGetResult{}},
		{"RtListParams", rtListParams{}},
		{"ToolDefinition", toolDefinitionWire{}},
		{"ToolsListParams", toolsListParams{}},
		{"ToolsGetParams", toolsGetParams{}},
		{"ToolsGetResult", toolsGetResult{}},
		{"ToolsExecuteParams", toolsExecuteParams{}},
		{"ToolsExecuteResult", toolsExecuteResult{}},
		{"ToolCallsListParams", toolCallsListParams{}},
		{"ToolCallsListResult", toolCallsListResult{}},
		{"ToolCallsCancelParams", toolCallsCancelParams{}},
		{"ToolCallsCancelResult", toolCallsCancelResult{}},
		{"McpTrustParams", mcpTrustParams{}},
		{"McpServerParams", mcpServerParams{}},
		{"McpResource", mcpResourceWire{}},
		{"McpResourcesResult", mcpResourcesResult{}},
		{"McpResourceParams", mcpResourceParams{}},
		{"McpReadResult", mcpReadResult{}},
		{"McpResourceTemplate", mcpResourceTemplateWire{}},
		{"McpTemplatesResult", mcpTemplatesResult{}},
		{"McpPrompt", mcpPromptWire{}},
		{"McpPromptsResult", mcpPromptsResult{}},
		{"McpPromptGetParams", mcpPromptGetParams{}},
		{"McpPromptGetResult", mcpPromptGetResult{}},
		{"McpResourceUpdated", mcpResourceUpdatedWire{}},
		{"McpListChanged", mcpListChangedWire{}},
		{"McpLaunch", mcp.Launch{}},
		{"McpOAuth", mcp.LaunchOAuth{}},
		{"McpLoginParams", mcpLoginParams{}},
		{"McpLoginResult", mcpLoginResult{}},
		{"McpLogoutParams", mcpLogoutParams{}},
		{"McpLogoutResult", mcpLogoutResult{}},
		{"ShowDocumentParams", showDocumentParams{}},
		{"AgentSessionResult", agentSessionResult{}},
		{"AgentPromptParams", agentPromptParams{}},
		{"AgentSessionInfo", agent.SessionInfo{}},
		{"AgentPromptResult", agent.PromptResult{}},
		{"FileChange", checkpoints.FileChange{}},
		{"Skipped", checkpoints.Skipped{}},
		{"Checkpoint", checkpoints.Checkpoint{}},
		{"CheckpointUsage", checkpoints.Usage{}},
		{"CheckpointsListParams", checkpointsListParams{}},
		{"CheckpointsListResult", checkpointsListResult{}},
		{"CheckpointsDiffParams", checkpointsDiffParams{}},
		{"CheckpointFileDiff", checkpointFileWire{}},
		{"CheckpointsDiffResult", checkpointsDiffResult{}},
		{"CheckpointsUndoParams", checkpointsUndoParams{}},
		{"CheckpointsRedoParams", checkpointsRedoParams{}},
		{"CheckpointConflict", checkpoints.Conflict{}},
		{"CheckpointResult", checkpoints.Result{}},
		{"CheckpointsGcResult", checkpoints.GCResult{}},
		{"CheckpointsChanged", checkpointsChangedWire{}},
	} {
		fields, ok := tsFields(ts, c.iface)
		if !ok {
			t.Errorf("protocol.ts has no interface %s", c.iface)
			continue
		}
		for _, name := range jsonNames(reflect.TypeOf(c.v)) {
			if !fields[name] {
				t.Errorf("protocol.ts: interface %s has no field %q (%T)", c.iface, name, c.v)
			}
		}
	}
}

// tsFields are the field names of a TypeScript interface, with those of
// the interfaces it extends.
func tsFields(ts, iface string) (map[string]bool, bool) {
	m := regexp.MustCompile(`(?s)export interface ` + iface + `\b(?: extends ([\w, ]+))? \{\n(.*?)\n\}`).FindStringSubmatch(ts)
	if m == nil {
		return nil, false
	}
	fields := map[string]bool{}
	for _, f := range regexp.MustCompile(`(?m)^  (\w+)\??:`).FindAllStringSubmatch(m[2], -1) {
		fields[f[1]] = true
	}
	for _, base := range strings.Split(m[1], ",") {
		if base = strings.TrimSpace(base); base != "" {
			more, ok := tsFields(ts, base)
			if !ok {
				return nil, false
			}
			for f := range more {
				fields[f] = true
			}
		}
	}
	return fields, true
}

// jsonNames are the JSON field names of a struct, embedded ones included.
func jsonNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" {
			names = append(names, jsonNames(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}
