// The editor protocol of nexusd --stdio: the names of its methods,
// notifications and requests, and the JSON shapes of their params and
// results. This is the one copy the extension, its tests and the Node
// protocol tests (integration/editor/protocol.mjs, built from this file)
// share; server/protocol_ts_test.go fails when it drifts from the Go structs
// of server/ (their json tags are the names here).
//
// Times are RFC 3339 strings; fields the daemon leaves out when empty are
// optional.

/** The nexus/ methods the editor calls (server/methods.go). */
export const Methods = {
  definitionsGet: 'nexus/definitions/get',
  definitionsSet: 'nexus/definitions/set',
  definitionsApplyDiff: 'nexus/definitions/applyDiff',
  definitionsDelete: 'nexus/definitions/delete',
  definitionsRestore: 'nexus/definitions/restore',
  definitionsList: 'nexus/definitions/list',
  definitionsHistory: 'nexus/definitions/history',
  definitionsDiff: 'nexus/definitions/diff',
  runtimeGet: 'nexus/runtime/get',
  runtimeSet: 'nexus/runtime/set',
  runtimeDelete: 'nexus/runtime/delete',
  runtimeList: 'nexus/runtime/list',
  toolsList: 'nexus/tools/list',
  toolsGet: 'nexus/tools/get',
  toolsExecute: 'nexus/tools/execute',
  toolCallsList: 'nexus/toolCalls/list',
  toolCallsCancel: 'nexus/toolCalls/cancel',
  mcpServers: 'nexus/mcp/servers',
  mcpRestart: 'nexus/mcp/restart',
  mcpTrust: 'nexus/mcp/trust',
  hooksList: 'nexus/hooks/list',
  hooksTrust: 'nexus/hooks/trust',
  mcpResourcesList: 'nexus/mcp/resources/list',
  mcpResourcesRead: 'nexus/mcp/resources/read',
  mcpResourcesTemplates: 'nexus/mcp/resources/templates',
  mcpResourcesSubscribe: 'nexus/mcp/resources/subscribe',
  mcpResourcesUnsubscribe: 'nexus/mcp/resources/unsubscribe',
  mcpPromptsList: 'nexus/mcp/prompts/list',
  mcpPromptsGet: 'nexus/mcp/prompts/get',
  mcpLogin: 'nexus/mcp/login',
  mcpLogout: 'nexus/mcp/logout',
  // Being added beside ListApprovals/RevokeApproval of gRPC; an older
  // daemon answers MethodNotFound.
  approvalsList: 'nexus/approvals/list',
  approvalsRevoke: 'nexus/approvals/revoke',
  // Only when the daemon runs the agent.
  agentSessionsNew: 'nexus/agent/sessions/new',
  agentSessionsList: 'nexus/agent/sessions/list',
  agentSessionsLoad: 'nexus/agent/sessions/load',
  agentSessionsDelete: 'nexus/agent/sessions/delete',
  agentPrompt: 'nexus/agent/prompt',
  agentCancel: 'nexus/agent/cancel',
  // Checkpoints: what agents, apps, MCP clients and their commands changed
  // (server/checkpoints.go). With checkpoints.enabled: false they answer
  // FailedPrecondition.
  checkpointsList: 'nexus/checkpoints/list',
  checkpointsDiff: 'nexus/checkpoints/diff',
  checkpointsUndo: 'nexus/checkpoints/undo',
  checkpointsRedo: 'nexus/checkpoints/redo',
  checkpointsGc: 'nexus/checkpoints/gc',
} as const;

/** The notifications nexusd sends (server/outbox.go). */
export const Notifications = {
  toolCall: 'nexus/toolCall',
  definitionChanged: 'nexus/definitionChanged',
  runtimeChanged: 'nexus/runtimeChanged',
  mcpServerStatus: 'nexus/mcpServerStatus',
  log: 'nexus/log',
  logMessage: 'window/logMessage',
  progress: '$/progress',
  agentUpdate: 'nexus/agent/update',
  mcpResourceUpdated: 'nexus/mcp/resourceUpdated',
  mcpListChanged: 'nexus/mcp/listChanged',
  checkpointsChanged: 'nexus/checkpointsChanged',
} as const;

/** The requests nexusd sends the editor. */
export const Requests = {
  requestPermission: 'nexus/requestPermission',
  requestMcpTrust: 'nexus/requestMcpTrust',
  requestHookTrust: 'nexus/requestHookTrust',
  // LSP's, during nexus/mcp/login: {uri, external: true} opens the sign-in
  // page in the browser (vscode-languageclient does it by itself).
  showDocument: 'window/showDocument',
  requestElicitation: 'nexus/requestElicitation',
} as const;

/** JSON-RPC error codes of nexus/ methods (docs/editor-protocol.md). */
export const ErrorCodes = {
  MethodNotFound: -32601,
  InvalidParams: -32602,
  NotInitialized: -32002,
  RequestCancelled: -32800,
  Unavailable: -32003,
  NotFound: -32004,
  Conflict: -32009,
  FailedPrecondition: -32012,
} as const;

// ---- shared shapes --------------------------------------------------------

/** tools.CallError. */
export interface CallError {
  code: string;
  message: string;
}

/** tools.Progress. */
export interface Progress {
  progress: number;
  total?: number;
  message?: string;
}

/** tools.RiskAssessment. */
export interface RiskAssessment {
  level: string;
  scope: string;
  details?: string[];
}

/** tools.ICERC: intent, command, expected outcome, risk and scope. */
export interface Icerc {
  intent: string;
  command: string;
  expectedOutcome: string;
  risk: RiskAssessment;
  /** Who asks: the party whose call this is. */
  asker?: string;
  /** What an "always" answer would remember; absent when it counts once. */
  always?: string;
  /** What the call would change in the files, computed by Nexus from the
   * tool's arguments and the files as they are (write_file, edit_file);
   * absent when the tool has no preview or it failed (risk.details says
   * why). The question carries before and after; a call's record only the
   * diff. */
  changes?: ProposedChange[];
}

/** tools.ProposedChange: the change a call would make to one file. */
export interface ProposedChange {
  /** Slash-separated, relative to the workspace root. */
  path: string;
  action: 'added' | 'modified' | 'deleted' | string;
  /** The change as git shows it; cut (or empty) when truncated. */
  diff: string;
  /** The text now and after the call; absent when there is no file now,
   * either side is binary, or it is over 1 MiB. */
  before?: string;
  after?: string;
  binary?: boolean;
  truncated?: boolean;
}

/** The status of a tool call. */
export type ToolCallStatus = 'initiated' | 'running' | 'completed' | 'error' | 'cancelled' | string;

/** toolCallWire: a tool call as nexus/toolCall and nexus/toolCalls/list carry it. */
export interface ToolCall {
  toolCallId: string;
  toolName: string;
  serverName?: string;
  argumentsJson: string;
  status: ToolCallStatus;
  resultJson?: string;
  error?: CallError;
  appId?: string;
  /** Who started it: "editor", "cli", "app:<id>", "agent:<session>", ... */
  author?: string;
  taskId?: string;
  requestId?: string;
  /** The agent session (and its turn) or MCP session whose changes the call's are undone with. */
  session?: string;
  turn?: string;
  title?: string;
  kind?: string;
  startedAt: string;
  endedAt?: string;
  progress?: Progress;
  icerc?: Icerc;
  argumentsTruncated?: boolean;
  argumentsSize?: number;
  resultTruncated?: boolean;
  resultSize?: number;
}

// ---- lifecycle --------------------------------------------------------------

/** server.Info: the "nexus" member of the initialize result. */
export interface DaemonInfo {
  version: string;
  workspace: string;
  grpcAddress: string;
  grpcTcpAddress?: string;
  /** SHA-256 fingerprint of the TLS certificate of grpcTcpAddress. */
  tlsFingerprint?: string;
  adminTokenFile?: string;
  definitionsRoot?: string;
  watchDebounce?: string;
}

/** capabilities.nexus of the initialize result. */
export interface NexusCapabilities {
  methods: string[];
  notifications: string[];
  requestPermission: boolean;
  requestMcpTrust: boolean;
  requestHookTrust?: boolean;
  requestElicitation?: boolean;
  workDoneProgress: boolean;
}

export interface InitializeResult {
  serverInfo: { name: string; version: string };
  capabilities: { nexus: NexusCapabilities };
  nexus: DaemonInfo;
}

// ---- definitions ------------------------------------------------------------

export interface DefGetParams {
  appId?: string;
  path: string;
  revision?: string;
}
export interface DefGetResult {
  content: string;
  revision: string;
}
export interface DefSetParams {
  appId?: string;
  path: string;
  content: string;
  commitMessage?: string;
  expectedRevision?: string;
}
export interface RevisionResult {
  revision: string;
}
export interface DefApplyDiffParams {
  appId?: string;
  path: string;
  diff: string;
  commitMessage?: string;
  expectedRevision?: string;
}
export interface RevisionContentResult {
  revision: string;
  content: string;
}
export interface DefDeleteParams {
  appId?: string;
  path: string;
  commitMessage?: string;
  expectedRevision?: string;
}
export interface DefRestoreParams {
  appId?: string;
  path: string;
  revision: string;
  commitMessage?: string;
  expectedRevision?: string;
}
export interface DefListParams {
  appId?: string;
  path?: string;
  recursive?: boolean;
}
export interface DefEntry {
  name: string;
  path: string;
  /** FILE or DIRECTORY. */
  type: string;
  size: number;
}
export interface DefListResult {
  entries: DefEntry[];
}
export interface DefHistoryParams {
  appId?: string;
  path: string;
  limit?: number;
  pageToken?: string;
}
export interface HistoryEntry {
  revision: string;
  author: string;
  message: string;
  timestamp: string;
  /** ADDED, MODIFIED or DELETED. */
  change: string;
}
export interface DefHistoryResult {
  entries: HistoryEntry[];
  nextPageToken?: string;
}
export interface DefDiffParams {
  appId?: string;
  path: string;
  fromRevision: string;
  toRevision?: string;
}
export interface DefDiffResult {
  diff: string;
}

// ---- runtime ------------------------------------------------------------------

export interface RtKeyParams {
  appId?: string;
  namespace?: string;
  key: string;
}
export interface RtGetResult {
  found: boolean;
  value: string;
  expiresAt?: string;
}
export interface RtSetParams extends RtKeyParams {
  value: string;
  ttlSeconds?: number;
}
export type EmptyResult = Record<string, never>;
export interface RtDeleteResult {
  deleted: boolean;
}
export interface RtListParams {
  appId?: string;
  namespace?: string;
  prefix?: string;
}
export interface RtListResult {
  keys: string[];
}

// ---- tools and tool calls -------------------------------------------------------

/** toolDefinitionWire. */
export interface ToolDefinition {
  name: string;
  title?: string;
  description: string;
  serverName?: string;
  inputSchemaJson: string;
  outputSchemaJson?: string;
  kind: string;
  risk: string;
}
export interface ToolsListParams {
  appId?: string;
  serverName?: string;
}
export interface ToolsListResult {
  tools: ToolDefinition[];
}
export interface ToolsGetParams {
  appId?: string;
  name: string;
  serverName?: string;
}
export interface ToolsGetResult {
  tool?: ToolDefinition;
  found: boolean;
}
export interface ToolsExecuteParams {
  toolName: string;
  serverName?: string;
  argumentsJson?: string;
  arguments?: unknown;
  requestingAppId?: string;
  taskId?: string;
  requestId?: string;
  intent?: string;
  expectedOutcome?: string;
  workDoneToken?: string | number;
}
export interface ToolsExecuteResult {
  success: boolean;
  message?: string;
  outputJson?: string;
  toolCallId: string;
  errorCode?: string;
}
export interface ToolCallsListParams {
  appId?: string;
  status?: string;
  limit?: number;
}
export interface ToolCallsListResult {
  toolCalls: ToolCall[];
}
export interface ToolCallsCancelParams {
  toolCallId: string;
  appId?: string;
}
export interface ToolCallsCancelResult {
  cancelled: boolean;
}

// ---- MCP servers ------------------------------------------------------------------

/** mcp.LaunchOAuth: how an http entry signs in; secrets by variable name. */
export interface McpOAuth {
  /** authorization_code (a person signs in), client_credentials or enterprise (SEP-990). */
  grant: string;
  clientId?: string;
  clientSecretEnv?: string;
  privateKeyEnv?: string;
  signingAlgorithm?: string;
  scopes?: string[];
  clientMetadataUrl?: string;
  redirectPort?: number;
  /** The identity provider of the enterprise grant. */
  idp?: McpIdP;
}

/** mcp.LaunchIdP: the enterprise grant's identity provider, and where the person's ID token comes from. */
export interface McpIdP {
  issuer?: string;
  tokenEndpoint?: string;
  clientId: string;
  clientSecretEnv?: string;
  idTokenEnv?: string;
  /** A command (run without a shell) that prints the person's ID token. */
  idTokenCommand?: string[];
}

/** mcp.Launch: what an MCP server entry runs. */
export interface McpLaunch {
  transport: string;
  command?: string;
  args?: string[];
  cwd?: string;
  env?: Record<string, string>;
  inheritEnv?: string[];
  url?: string;
  headers?: Record<string, string>;
  oauth?: McpOAuth;
}

/** mcpServerWire: nexus/mcp/servers entries and nexus/mcpServerStatus. */
export interface McpServer {
  name: string;
  /** starting, ready, failed, disabled, pending_approval, needs_auth (sign in: nexus/mcp/login): tools/mcp's states. */
  state: string;
  transport?: string;
  source?: string;
  toolCount: number;
  error?: string;
  restarts?: number;
  since: string;
  lazy?: boolean;
  pid?: number;
  launch: McpLaunch;
  pin: string;
  trusted: boolean;
}
export interface McpServersResult {
  servers: McpServer[];
}
export interface McpRestartParams {
  name: string;
}
export interface McpTrustParams {
  name: string;
  pin?: string;
}
export interface McpTrustResult {
  server: McpServer;
}
/** A hook of .nexus/config.yaml as the person approves it (tools/hooks Status). */
export interface HookStatus {
  /** "preToolUse[0]": the event and the index in its list. */
  name: string;
  /** preToolUse, postToolUse or userPromptSubmit. */
  event: string;
  match?: string;
  command: string[];
  timeout: string;
  /** The workspace files the command names, pinned with their hashes. */
  files?: PinnedFile[];
  pin: string;
  trusted: boolean;
  /** Why it cannot be pinned now; it does not run. */
  error?: string;
}
export interface PinnedFile {
  path: string;
  sha256: string;
}
export interface HooksListResult {
  hooks: HookStatus[];
}
export interface HooksTrustParams {
  name: string;
  pin?: string;
}
export interface HooksTrustResult {
  hook: HookStatus;
}
/** Params of the methods that list: serverName empty, every ready server. */
export interface McpServerParams {
  serverName?: string;
}
/** mcpResourceWire (gRPC McpResource). */
export interface McpResource {
  serverName: string;
  uri: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
}
export interface McpResourcesResult {
  resources: McpResource[];
}
/** mcpResourceParams: read, subscribe, unsubscribe. */
export interface McpResourceParams {
  serverName: string;
  uri: string;
}
/** mcpReadResult: contentsJson is the JSON array of {uri, mimeType, text}
 * or {uri, mimeType, bytes, blob} (a file under .nexus/mcp/blobs). */
export interface McpReadResult {
  contentsJson: string;
}
/** mcpResourceTemplateWire (gRPC McpResourceTemplate). */
export interface McpResourceTemplate {
  serverName: string;
  uriTemplate: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
}
export interface McpTemplatesResult {
  templates: McpResourceTemplate[];
}
/** mcpPromptWire (gRPC McpPrompt): argumentsJson is [{name, description, required}]. */
export interface McpPrompt {
  serverName: string;
  name: string;
  title?: string;
  description?: string;
  argumentsJson: string;
}
export interface McpPromptsResult {
  prompts: McpPrompt[];
}
export interface McpPromptGetParams {
  serverName: string;
  name: string;
  arguments?: Record<string, string>;
}
/** resultJson is the rendered prompt: {description, messages}. */
export interface McpPromptGetResult {
  resultJson: string;
}
/** nexus/mcp/login: answered once signed in; meanwhile the daemon asks the
 * editor to open the authorization URL (window/showDocument, external). */
export interface McpLoginParams {
  name: string;
}
export interface McpLoginResult {
  server: McpServer;
}
export interface McpLogoutParams {
  name: string;
}
export interface McpLogoutResult {
  server: McpServer;
  /** false when there were no tokens to delete. */
  signedOut: boolean;
}

// ---- remembered answers ---------------------------------------------------------------

/** A remembered "always" answer (gRPC ListApprovals), with what it covers. */
export interface Approval {
  /** "" for the person: the answer covers the person and every agent session acting for them. */
  appId: string;
  /** The answer's name: the tool's, with its scope ("execute_command:ls", "read_file:src/**",
   * "execute_command:**" for a broad answer); nexus/approvals/revoke takes it back. */
  toolName: string;
  serverName: string;
  decision: 'allow' | 'reject';
  definitionHash: string;
  time: string;
  /** The tool's own name (absent from an older nexusd, whose toolName is the tool). */
  tool?: string;
  /** What the answer covers: one command, one path, a directory and everything under it, one
   * host (web_fetch), the whole tool (MCP tools), or broad: every call of the tool, from before
   * answers had scopes. */
  scope?: 'command' | 'path' | 'directory' | 'domain' | 'tool' | 'broad';
  broad?: boolean;
  command?: string[];
  path?: string;
  directory?: string;
  domain?: string;
  /** covers says in words which calls the answer covers. */
  covers?: string;
}
export type ApprovalsListParams = Record<string, never>;
export interface ApprovalsListResult {
  approvals: Approval[];
}
export interface ApprovalsRevokeParams {
  appId: string;
  /** A tool's name (every answer about it) or an answer's toolName (that one). */
  toolName: string;
  serverName: string;
}
export interface ApprovalsRevokeResult {
  revoked: boolean;
  /** How many answers were forgotten. */
  count?: number;
}

// ---- agent --------------------------------------------------------------------------

export interface AgentUsage {
  inputTokens: number;
  outputTokens: number;
  cachedTokens?: number;
  requests: number;
}
export interface AgentCost {
  amount: number;
  currency: string;
}
export interface AgentSessionInfo {
  sessionId: string;
  title: string;
  profile: string;
  model: string;
  appId?: string;
  createdAt: string;
  updatedAt: string;
  messages: number;
  usage: AgentUsage;
  cost?: AgentCost;
  running: boolean;
}
export interface AgentCommand {
  name: string;
  description: string;
  input?: { hint: string };
}
/** agent.Compaction: what a compaction did (/compact's, or context.autoCompact's before a request),
 * on the command_output update whose content says it in words. Tokens are the request's, as
 * Nexus counts them. */
export interface AgentCompaction {
  trigger: 'manual' | 'auto';
  messages: number;
  dropped?: number;
  tokensBefore: number;
  tokensAfter: number;
  limit?: number;
  error?: string;
}
/** agent.Update, an ACP session update (the fields the extension reads). */
export interface AgentUpdate {
  sessionUpdate: string;
  content?: unknown;
  toolCallId?: string;
  title?: string;
  kind?: string;
  status?: string;
  /** On a subagent's tool call: the toolCallId of the task call that started it. */
  parentToolCallId?: string;
  /** On a completed call that changed files: those files with their diffs (its checkpoint's,
   * each cut to a few KiB: truncated), in the shape of a question's icerc.changes (no before or
   * after text); moreChanges is how many more files it changed. */
  changes?: ProposedChange[];
  moreChanges?: number;
  compaction?: AgentCompaction;
  [field: string]: unknown;
}
export interface AgentNewParams {
  profile?: string;
}
export interface AgentSessionParams {
  sessionId: string;
}
export interface AgentSessionResult {
  session: AgentSessionInfo;
  profiles: string[];
  availableCommands: AgentCommand[];
}
export interface AgentLoadResult extends AgentSessionResult {
  updates: AgentUpdate[];
}
export interface AgentListResult {
  sessions: AgentSessionInfo[];
}
export interface AgentPromptParams {
  sessionId: string;
  prompt: string;
}
export interface AgentPromptResult {
  stopReason: string;
  usage: AgentUsage;
  cost?: AgentCost;
  quit?: boolean;
  resume?: string;
}
export interface AgentCancelResult {
  cancelled: boolean;
}

// ---- notifications ------------------------------------------------------------------

/** definitionChangeWire. */
export interface DefinitionChanged {
  path: string;
  revision: string;
  author: string;
  change: string;
  message?: string;
  timestamp: string;
}
/** runtimeChangeWire. */
export interface RuntimeChanged {
  namespace: string;
  key: string;
  change: string;
  value?: string;
  timestamp: string;
}
/** logWire: an app's LogMessage, a daemon warning, or (source "mcp") an
 * MCP server's log message with its server, logger and data. */
export interface LogEntry {
  source?: string;
  /** debug, info, warn, error; an MCP server's: debug, info, notice,
   * warning, error, critical, alert, emergency. */
  level: string;
  message: string;
  appId?: string;
  taskId?: string;
  requestId?: string;
  context?: Record<string, string>;
  time: string;
  server?: string;
  logger?: string;
  /** What the server logged, any JSON value; message is its text. */
  data?: unknown;
}
/** mcpResourceUpdatedWire: a resource the editor subscribed to (or one
 * under it) changed: read it again. */
export interface McpResourceUpdated {
  server: string;
  uri: string;
  time: string;
}
/** mcpListChangedWire: a server's tools, resources or prompts changed. */
export interface McpListChanged {
  server: string;
  kind: 'tools' | 'resources' | 'prompts' | string;
  time: string;
}
/** agentUpdateParams. */
export interface AgentUpdateParams {
  sessionId: string;
  update: AgentUpdate;
}

// ---- checkpoints (package checkpoints; server/checkpoints.go) ---------------

/** checkpoints.FileChange: one file a checkpoint changed; before and after are blob ids of the
 * history repository (absent: the file did not exist). */
export interface FileChange {
  /** Slash-separated, relative to the workspace root. */
  path: string;
  action: 'added' | 'modified' | 'deleted' | string;
  before?: string;
  after?: string;
  beforeExecutable?: boolean;
  afterExecutable?: boolean;
}
/** checkpoints.Skipped: a change seen but not recorded, and why (ignored, over the size cap...). */
export interface Skipped {
  path: string;
  reason: string;
}
/** checkpoints.Checkpoint: one tool call's changes, or an undo's, or a redo's. */
export interface Checkpoint {
  /** The tool call's id for kind "call"; a fresh id for an undo or a redo. */
  id: string;
  kind: 'call' | 'undo' | 'redo' | string;
  toolCallId?: string;
  toolName?: string;
  serverName?: string;
  /** "agent:<session>", "app:<id>", "mcp:<client>", "cli", "editor"... */
  author: string;
  appId?: string;
  /** The agent session, "app:<id>" for an app's own calls, or an MCP client's session. */
  session: string;
  /** The turn of an agent session: "1", "2"... */
  turn?: string;
  time: string;
  /** An undo's: the checkpoints it took back; a redo's: the undo it reversed. */
  undoes?: string[];
  /** The undo that currently takes this checkpoint back; absent when its changes stand. */
  undoneBy?: string;
  files: FileChange[];
  skipped?: Skipped[];
}
/** checkpoints.Usage: the store's size. */
export interface CheckpointUsage {
  checkpoints: number;
  sessions: number;
  bytes: number;
  maxBytes: number;
}
/** checkpointsListParams: every checkpoint by default, newest first. turn needs session. */
export interface CheckpointsListParams {
  session?: string;
  turn?: string;
  /** At most this many, newest first; 0 or absent: all. */
  limit?: number;
}
export interface CheckpointsListResult {
  checkpoints: Checkpoint[];
  usage: CheckpointUsage;
}
/** checkpointsDiffParams: id is a checkpoint's id or a unique prefix of it. */
export interface CheckpointsDiffParams {
  id: string;
}
/** checkpointFileWire: a file of a checkpoint with its unified diff and, for VS Code's diff editor,
 * its contents as text (before and after replace FileChange's blob ids). A content is absent when
 * the file was absent, binary or not UTF-8 (binary: true), or over 1 MiB (truncated: true). */
export interface CheckpointFileDiff {
  path: string;
  action: 'added' | 'modified' | 'deleted' | string;
  beforeExecutable?: boolean;
  afterExecutable?: boolean;
  /** As `git diff` prints it, no colour. */
  diff: string;
  binary?: boolean;
  before?: string;
  after?: string;
  truncated?: boolean;
}
export interface CheckpointsDiffResult {
  checkpoint: Checkpoint;
  files: CheckpointFileDiff[];
}
/** checkpointsUndoParams: call alone undoes that call; session alone the whole session; session and
 * turn that turn; lastTurn the last turn of session (or of the most recent session); nothing at all
 * is lastTurn of the most recent session. force restores files changed since (conflicts). */
export interface CheckpointsUndoParams {
  call?: string;
  session?: string;
  turn?: string;
  lastTurn?: boolean;
  force?: boolean;
}
/** checkpointsRedoParams: id is the undo to reverse; absent: the most recent undo that stands. */
export interface CheckpointsRedoParams {
  id?: string;
  force?: boolean;
}
/** checkpoints.Conflict: a file changed since the checkpoint, left alone. */
export interface CheckpointConflict {
  path: string;
  reason: string;
}
/** checkpoints.Result: what an undo or redo did. With conflicts and no force, nothing was changed
 * (checkpoint absent, restored empty): offer "Undo anyway" (force: true). */
export interface CheckpointResult {
  checkpoint?: Checkpoint;
  undone: string[];
  restored: FileChange[];
  conflicts?: CheckpointConflict[];
}
/** checkpoints.GCResult. */
export interface CheckpointsGcResult {
  pruned: number;
  bytesBefore: number;
  bytesAfter: number;
}
/** nexus/checkpointsChanged: checkpoints were added, undone, redone or pruned (of session, when
 * given): list them again. */
export interface CheckpointsChanged {
  session?: string;
}

// ---- requests to the editor -------------------------------------------------------

/** The answers to nexus/requestPermission (policy.Answer). */
export type PermissionAnswer = 'allow_once' | 'allow_always' | 'reject_once' | 'reject_always';
/** The object form of a nexus/requestPermission answer. directory, with allow_always or
 * reject_always to a file tool's call, widens what is remembered to that directory (relative to
 * the workspace, "." for all of it) and everything under it; it must hold the call's path, or
 * the call is denied. */
export interface PermissionAnswerObject {
  answer: PermissionAnswer;
  directory?: string;
}
export const PermissionAnswers: readonly PermissionAnswer[] = ['allow_once', 'allow_always', 'reject_once', 'reject_always'];

/** permissionParams: the params of nexus/requestPermission. */
export interface PermissionParams {
  toolCall: ToolCall;
  icerc: Icerc;
  options: PermissionAnswer[];
}

/** mcpTrustRequest: the params of nexus/requestMcpTrust; answer "allow" or "reject". */
export interface McpTrustRequest {
  server: McpServer;
  options: string[];
}

/** hookTrustRequest: the params of nexus/requestHookTrust; answer "allow" or "reject". */
export interface HookTrustRequest {
  hook: HookStatus;
  options: string[];
}

/** LSP's ShowDocumentParams as nexusd sends them (window/showDocument);
 * the answer is {success: boolean}. */
export interface ShowDocumentParams {
  uri: string;
  external: boolean;
}

/** The actions of an answer to nexus/requestElicitation. */
export type ElicitationAction = 'accept' | 'decline' | 'cancel';

/** elicitationParams: the params of nexus/requestElicitation, an MCP
 * server's question to the person (elicitation/create) during a call: a
 * form (mode "form", requestedSchema) or a URL to visit (mode "url"). */
export interface ElicitationParams {
  requestId: string;
  server: string;
  /** The call the question belongs to, when the daemon can tell. */
  toolCall?: ToolCall;
  mode: 'form' | 'url' | string;
  message: string;
  /** A flat JSON Schema object: string (format email, uri, date,
   * date-time; minLength, maxLength), number and integer (minimum,
   * maximum), boolean, enums (enum, enumNames, oneOf of {const, title}),
   * and arrays of enums (items.enum or items.anyOf; minItems, maxItems);
   * default, title, description, required. */
  requestedSchema?: ElicitationSchema;
  url?: string;
  elicitationId?: string;
}

/** elicitationResult: the answer to nexus/requestElicitation. */
export interface ElicitationResult {
  action: ElicitationAction;
  content?: Record<string, unknown>;
}

/** The requested schema of a form. */
export interface ElicitationSchema {
  type?: 'object';
  title?: string;
  description?: string;
  properties?: Record<string, ElicitationField>;
  required?: string[];
}

/** One field of a form (a primitive property of the requested schema). */
export interface ElicitationField {
  type?: 'string' | 'number' | 'integer' | 'boolean' | 'array';
  title?: string;
  description?: string;
  default?: unknown;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  enum?: string[];
  enumNames?: string[];
  oneOf?: { const: string; title?: string }[];
  anyOf?: { const: string; title?: string }[];
  items?: { type?: string; enum?: string[]; anyOf?: { const: string; title?: string }[] };
  minItems?: number;
  maxItems?: number;
}

/** The params and result of every method, by name, for typed calls. */
export interface MethodTypes {
  'nexus/definitions/get': [DefGetParams, DefGetResult];
  'nexus/definitions/set': [DefSetParams, RevisionResult];
  'nexus/definitions/applyDiff': [DefApplyDiffParams, RevisionContentResult];
  'nexus/definitions/delete': [DefDeleteParams, RevisionResult];
  'nexus/definitions/restore': [DefRestoreParams, RevisionContentResult];
  'nexus/definitions/list': [DefListParams, DefListResult];
  'nexus/definitions/history': [DefHistoryParams, DefHistoryResult];
  'nexus/definitions/diff': [DefDiffParams, DefDiffResult];
  'nexus/runtime/get': [RtKeyParams, RtGetResult];
  'nexus/runtime/set': [RtSetParams, EmptyResult];
  'nexus/runtime/delete': [RtKeyParams, RtDeleteResult];
  'nexus/runtime/list': [RtListParams, RtListResult];
  'nexus/tools/list': [ToolsListParams, ToolsListResult];
  'nexus/tools/get': [ToolsGetParams, ToolsGetResult];
  'nexus/tools/execute': [ToolsExecuteParams, ToolsExecuteResult];
  'nexus/toolCalls/list': [ToolCallsListParams, ToolCallsListResult];
  'nexus/toolCalls/cancel': [ToolCallsCancelParams, ToolCallsCancelResult];
  'nexus/mcp/servers': [Record<string, never>, McpServersResult];
  'nexus/mcp/restart': [McpRestartParams, EmptyResult];
  'nexus/mcp/trust': [McpTrustParams, McpTrustResult];
  'nexus/hooks/list': [Record<string, never>, HooksListResult];
  'nexus/hooks/trust': [HooksTrustParams, HooksTrustResult];
  'nexus/mcp/resources/list': [McpServerParams, McpResourcesResult];
  'nexus/mcp/resources/read': [McpResourceParams, McpReadResult];
  'nexus/mcp/resources/templates': [McpServerParams, McpTemplatesResult];
  'nexus/mcp/resources/subscribe': [McpResourceParams, EmptyResult];
  'nexus/mcp/resources/unsubscribe': [McpResourceParams, EmptyResult];
  'nexus/mcp/prompts/list': [McpServerParams, McpPromptsResult];
  'nexus/mcp/prompts/get': [McpPromptGetParams, McpPromptGetResult];
  'nexus/mcp/login': [McpLoginParams, McpLoginResult];
  'nexus/mcp/logout': [McpLogoutParams, McpLogoutResult];
  'nexus/approvals/list': [ApprovalsListParams, ApprovalsListResult];
  'nexus/approvals/revoke': [ApprovalsRevokeParams, ApprovalsRevokeResult];
  'nexus/agent/sessions/new': [AgentNewParams, AgentSessionResult];
  'nexus/agent/sessions/list': [Record<string, never>, AgentListResult];
  'nexus/agent/sessions/load': [AgentSessionParams, AgentLoadResult];
  'nexus/agent/sessions/delete': [AgentSessionParams, EmptyResult];
  'nexus/agent/prompt': [AgentPromptParams, AgentPromptResult];
  'nexus/agent/cancel': [AgentSessionParams, AgentCancelResult];
  'nexus/checkpoints/list': [CheckpointsListParams, CheckpointsListResult];
  'nexus/checkpoints/diff': [CheckpointsDiffParams, CheckpointsDiffResult];
  'nexus/checkpoints/undo': [CheckpointsUndoParams, CheckpointResult];
  'nexus/checkpoints/redo': [CheckpointsRedoParams, CheckpointResult];
  'nexus/checkpoints/gc': [Record<string, never>, CheckpointsGcResult];
}

export type MethodName = keyof MethodTypes;
export type ParamsOf<M extends MethodName> = MethodTypes[M][0];
export type ResultOf<M extends MethodName> = MethodTypes[M][1];

/** The params of every notification, by name. */
export interface NotificationTypes {
  'nexus/toolCall': ToolCall;
  'nexus/definitionChanged': DefinitionChanged;
  'nexus/runtimeChanged': RuntimeChanged;
  'nexus/mcpServerStatus': McpServer;
  'nexus/log': LogEntry;
  'window/logMessage': { type: number; message: string };
  '$/progress': { token: string | number; value: unknown };
  'nexus/agent/update': AgentUpdateParams;
  'nexus/mcp/resourceUpdated': McpResourceUpdated;
  'nexus/mcp/listChanged': McpListChanged;
  'nexus/checkpointsChanged': CheckpointsChanged;
}

/** Sender is what sends a typed request: a LanguageClient or a
 * vscode-jsonrpc MessageConnection both fit. */
export interface Sender {
  sendRequest<R>(method: string, params: unknown): Promise<R>;
}

/** call sends method with params and returns its typed result. */
export function call<M extends MethodName>(conn: Sender, method: M, params: ParamsOf<M>): Promise<ResultOf<M>> {
  return conn.sendRequest<ResultOf<M>>(method, params);
}

/** isMethodNotFound tells whether err is a JSON-RPC MethodNotFound error,
 * as an older daemon answers a method it does not have. */
export function isMethodNotFound(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === ErrorCodes.MethodNotFound;
}
