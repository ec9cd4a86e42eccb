import * as crypto from 'node:crypto';
import * as vscode from 'vscode';

/** What a webview of the extension is made of: its own script and style, under media/. */
export interface WebviewPage {
  /** The page's stylesheet and script in media/, after the shared buttons.css. */
  css: string;
  js: string;
  title: string;
  /** The body's HTML before the script. */
  body: string;
  /** More Content-Security-Policy directives, such as "form-action 'none';". */
  csp?: string;
}

/**
 * pageHTML is the HTML of a webview page: no remote content, only the
 * extension's styles and the page's one script (with a fresh nonce); no
 * images, frames, fonts or connections.
 */
export function pageHTML(webview: vscode.Webview, extensionUri: vscode.Uri, page: WebviewPage): string {
  const media = vscode.Uri.joinPath(extensionUri, 'media');
  const uri = (name: string) => webview.asWebviewUri(vscode.Uri.joinPath(media, name)).toString();
  const nonce = crypto.randomBytes(16).toString('base64');
  const csp = `default-src 'none'; style-src ${webview.cspSource}; script-src 'nonce-${nonce}';${page.csp ? ` ${page.csp}` : ''}`;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${uri('buttons.css')}">
<link rel="stylesheet" href="${uri(page.css)}">
<title>${page.title}</title>
</head>
<body>
${page.body}
<script nonce="${nonce}" src="${uri(page.js)}"></script>
</body>
</html>`;
}

/** The options of a webview that shows a page: scripts, and only media/. */
export function pageOptions(extensionUri: vscode.Uri): vscode.WebviewOptions {
  return { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'media')] };
}
