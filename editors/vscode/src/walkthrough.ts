// The "Get started with Nexus" walkthrough's steps are checked off by the
// extension itself, when what a step asks for has happened. Its
// completionEvents alone never check them in VS Code 1.100: the walkthroughs
// service is made lazily (the first time a walkthrough is opened, unless the
// Welcome page opens at startup) and registers the extension's steps only
// then. An onContext key that is already true at that moment is recorded as
// seen and never counted, also when it changes later; an onView or onCommand
// that happened before is not heard at all (gettingStartedService.ts,
// registerDoneListeners and initCompletionEventListeners).

import * as vscode from 'vscode';

/** The steps of package.json's walkthrough that the extension checks off. */
export type Step = 'install' | 'views' | 'activity';

const WALKTHROUGH = 'nexuscocreate.nexus#nexus.gettingStarted';
const marked = new Set<Step>();

/** completeStep checks a step off, once per window. */
export function completeStep(step: Step): void {
  if (marked.has(step)) {
    return;
  }
  marked.add(step);
  void mark(`${WALKTHROUGH}#${step}`, 0);
}

async function mark(id: string, attempt: number): Promise<void> {
  try {
    // VS Code's own command ("Welcome: Mark Step Complete"): it makes the
    // service if need be, and records the step as done.
    await vscode.commands.executeCommand('welcome.markStepComplete', id);
  } catch (err) {
    // A service just made registers the extension's steps a moment later
    // (up to 5 s): VS Code 1.100 has recorded the step already, a later one
    // may not have; try again.
    if (attempt < 10 && /does not exist/.test(String(err))) {
      setTimeout(() => void mark(id, attempt + 1), 1000);
    }
  }
}
