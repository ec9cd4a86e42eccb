// Generated from editors/vscode/src/protocol.ts by npm run bundle:protocol; do not edit.
const Methods = {
  definitionsGet: "nexus/definitions/get",
  definitionsSet: "nexus/definitions/set",
  definitionsApplyDiff: "nexus/definitions/applyDiff",
  definitionsDelete: "nexus/definitions/delete",
  definitionsRestore: "nexus/definitions/restore",
  definitionsList: "nexus/definitions/list",
  definitionsHistory: "nexus/definitions/history",
  definitionsDiff: "nexus/definitions/diff",
  runtimeGet: "nexus/runtime/get",
  runtimeSet: "nexus/runtime/set",
  runtimeDelete: "nexus/runtime/delete",
  runtimeList: "nexus/runtime/list",
  toolsList: "nexus/tools/list",
  toolsGet: "nexus/tools/get",
  toolsExecute: "nexus/tools/execute",
  toolCallsList: "nexus/toolCalls/list",
  toolCallsCancel: "nexus/toolCalls/cancel",
  mcpServers: "nexus/mcp/servers",
  mcpRestart: "nexus/mcp/restart",
  mcpTrust: "nexus/mcp/trust",
  hooksList: "nexus/hooks/list",
  hooksTrust: "nexus/hooks/trust",
  mcpResourcesList: "nexus/mcp/resources/list",
  mcpResourcesRead: "nexus/mcp/resources/read",
  mcpResourcesTemplates: "nexus/mcp/resources/templates",
  mcpResourcesSubscribe: "nexus/mcp/resources/subscribe",
  mcpResourcesUnsubscribe: "nexus/mcp/resources/unsubscribe",
  mcpPromptsList: "nexus/mcp/prompts/list",
  mcpPromptsGet: "nexus/mcp/prompts/get",
  mcpLogin: "nexus/mcp/login",
  mcpLogout: "nexus/mcp/logout",
  // Being added beside ListApprovals/RevokeApproval of gRPC; an older
  // daemon answers MethodNotFound.
  approvalsList: "nexus/approvals/list",
  approvalsRevoke: "nexus/approvals/revoke",
  // Only when the daemon runs the agent.
  agentSessionsNew: "nexus/agent/sessions/new",
  agentSessionsList: "nexus/agent/sessions/list",
  agentSessionsLoad: "nexus/agent/sessions/load",
  agentSessionsDelete: "nexus/agent/sessions/delete",
  agentPrompt: "nexus/agent/prompt",
  agentCancel: "nexus/agent/cancel",
  // Checkpoints: what agents, apps, MCP clients and their commands changed
  // (server/checkpoints.go). With checkpoints.enabled: false they answer
  // FailedPrecondition.
  checkpointsList: "nexus/checkpoints/list",
  checkpointsDiff: "nexus/checkpoints/diff",
  checkpointsUndo: "nexus/checkpoints/undo",
  checkpointsRedo: "nexus/checkpoints/redo",
  checkpointsGc: "nexus/checkpoints/gc"
};
const Notifications = {
  toolCall: "nexus/toolCall",
  definitionChanged: "nexus/definitionChanged",
  runtimeChanged: "nexus/runtimeChanged",
  mcpServerStatus: "nexus/mcpServerStatus",
  log: "nexus/log",
  logMessage: "window/logMessage",
  progress: "$/progress",
  agentUpdate: "nexus/agent/update",
  mcpResourceUpdated: "nexus/mcp/resourceUpdated",
  mcpListChanged: "nexus/mcp/listChanged",
  checkpointsChanged: "nexus/checkpointsChanged"
};
const Requests = {
  requestPermission: "nexus/requestPermission",
  requestMcpTrust: "nexus/requestMcpTrust",
  requestHookTrust: "nexus/requestHookTrust",
  // LSP's, during nexus/mcp/login: {uri, external: true} opens the sign-in
  // page in the browser (vscode-languageclient does it by itself).
  showDocument: "window/showDocument",
  requestElicitation: "nexus/requestElicitation"
};
const ErrorCodes = {
  MethodNotFound: -32601,
  InvalidParams: -32602,
  NotInitialized: -32002,
  RequestCancelled: -32800,
  Unavailable: -32003,
  NotFound: -32004,
  Conflict: -32009,
  FailedPrecondition: -32012
};
const PermissionAnswers = ["allow_once", "allow_always", "reject_once", "reject_always"];
function call(conn, method, params) {
  return conn.sendRequest(method, params);
}
function isMethodNotFound(err) {
  return typeof err === "object" && err !== null && err.code === ErrorCodes.MethodNotFound;
}
export {
  ErrorCodes,
  Methods,
  Notifications,
  PermissionAnswers,
  Requests,
  call,
  isMethodNotFound
};
