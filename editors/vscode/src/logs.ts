// The daemon's log entries as the output channel shows them.

import type { LogEntry } from './protocol';

/** mcpLogLine is the output channel's line for an MCP server's log message
 * (a nexus/log entry with a server), e.g. "[mcp:github] warning (http):
 * rate limited"; undefined for other entries, which the language client
 * already shows from window/logMessage. */
export function mcpLogLine(e: LogEntry): string | undefined {
  if (!e.server) {
    return undefined;
  }
  const logger = e.logger ? ` (${e.logger})` : '';
  return `[mcp:${e.server}] ${e.level}${logger}: ${e.message}`;
}
