// Completion and checks of .nexus/config.yaml, driven by the JSON Schema
// the extension ships (schemas/nexus-config.schema.json), for when no YAML
// extension reads the schema: with Red Hat's YAML extension installed,
// package.json's yamlValidation gives it the schema and this stands aside,
// so that the file has one set of completions and one of problems.

import * as fs from 'node:fs';
import * as vscode from 'vscode';
import { complete, describe, problems, type Schema } from './configModel';

const CONFIG = '/.nexus/config.yaml';
const YAML_EXTENSION = 'redhat.vscode-yaml';

function isConfig(doc: vscode.TextDocument): boolean {
  return doc.uri.path.endsWith(CONFIG);
}

/** ConfigSupport completes keys and values in .nexus/config.yaml and marks
 * its unknown keys and wrong values. */
export class ConfigSupport implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];
  private readonly diagnostics = vscode.languages.createDiagnosticCollection('nexus-config');
  private schema?: Schema;

  constructor(private readonly schemaFile: string) {
    if (vscode.extensions.getExtension(YAML_EXTENSION)) {
      return;
    }
    const selector: vscode.DocumentSelector = { pattern: `**${CONFIG}` };
    this.disposables.push(
      this.diagnostics,
      vscode.languages.registerCompletionItemProvider(selector, { provideCompletionItems: (doc, pos) => this.complete(doc, pos) }, ' '),
      vscode.workspace.onDidOpenTextDocument((d) => this.check(d)),
      vscode.workspace.onDidChangeTextDocument((e) => this.check(e.document)),
      vscode.workspace.onDidCloseTextDocument((d) => this.diagnostics.delete(d.uri)),
    );
    vscode.workspace.textDocuments.forEach((d) => this.check(d));
  }

  private load(): Schema | undefined {
    if (!this.schema) {
      try {
        this.schema = JSON.parse(fs.readFileSync(this.schemaFile, 'utf8')) as Schema;
      } catch {
        return undefined; // a broken install: nexusd still checks the file
      }
    }
    return this.schema;
  }

  private check(doc: vscode.TextDocument): void {
    const schema = isConfig(doc) ? this.load() : undefined;
    if (!schema) {
      return;
    }
    this.diagnostics.set(
      doc.uri,
      problems(schema, doc.getText()).map((p) => {
        const d = new vscode.Diagnostic(new vscode.Range(p.line, p.start, p.line, p.end), p.message, vscode.DiagnosticSeverity.Error);
        d.source = 'nexus';
        return d;
      }),
    );
  }

  private complete(doc: vscode.TextDocument, pos: vscode.Position): vscode.CompletionItem[] | undefined {
    const schema = this.load();
    if (!schema) {
      return undefined;
    }
    const c = complete(schema, doc.getText(), pos.line, pos.character);
    const range = doc.getWordRangeAtPosition(pos, /[\w.-]+/);
    const order = (i: number): string => String(i).padStart(4, '0');
    switch (c.kind) {
      case 'keys':
        return c.items.map((k, i) => {
          const item = new vscode.CompletionItem({ label: k.key, description: k.detail }, vscode.CompletionItemKind.Property);
          item.documentation = k.description; // plain text: it wraps (appendText's would not)
          item.detail = k.detail;
          item.sortText = order(i);
          item.range = range;
          if (k.block) {
            item.insertText = new vscode.SnippetString(`${k.key}:\n\t$0`);
          } else {
            item.insertText = `${k.key}: `;
            if (k.values.length > 0) {
              item.command = { title: 'values', command: 'editor.action.triggerSuggest' };
            }
          }
          return item;
        });
      case 'values':
        return c.values.map((v, i) => {
          const item = new vscode.CompletionItem(v, vscode.CompletionItemKind.EnumMember);
          item.detail = describe(c.schema);
          item.documentation = c.schema.description;
          item.sortText = order(i);
          item.range = range;
          return item;
        });
    }
    return undefined;
  }

  dispose(): void {
    this.disposables.forEach((d) => d.dispose());
  }
}
