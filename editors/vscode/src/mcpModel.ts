// What the MCP Servers view and its trust prompts say about a server
// entry; no vscode API, so that the tests run it in node.

import type { McpLaunch } from './protocol';

/**
 * launchText is what an MCP server entry runs, for the person who approves
 * it: its command line (with the names of its env), or its url; an oauth
 * block whose ID token comes from a command (the enterprise grant) names
 * that command too, since approving the entry lets it run.
 */
export function launchText(l: McpLaunch): string {
  const quote = (a: string) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`);
  const commandLine = (argv: string[]) => argv.filter((a) => a !== '').map(quote).join(' ');
  if (l.url) {
    const idTokenCommand = l.oauth?.idp?.idTokenCommand ?? [];
    return idTokenCommand.length ? `${l.url} (its ID token from: ${commandLine(idTokenCommand)})` : l.url;
  }
  const line = commandLine([l.command ?? '', ...(l.args ?? [])]);
  const env = Object.keys(l.env ?? {});
  return env.length ? `${line} (env: ${env.join(', ')})` : line;
}
