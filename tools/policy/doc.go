// Package policy decides whether a tool call may run — allow, ask or deny
// (TEPS) — builds the ICERC record shown to the person when it asks, and
// remembers their "always" answers. Start with [New].
//
// # Deciding
//
// [Policy.Decide] walks these levels, most specific first; the first level
// that has something to say about the call decides:
//
//	level                         source                         applies to
//	0  command deny rules         Rules.Commands (deny)          execute_command
//	1  the app's lists            apps[].grants.tools            calls of that app
//	2  per-tool policy            tools.policy (Rules.Tools)     every caller
//	3  command allow/ask rules    Rules.Commands (allow, ask)    execute_command
//	   web.allowedDomains         Rules.Web (allow)              web_fetch, web_search
//	4  the admin default          Rules.Admin (default allow)    the person (AppID ""), not an agent
//	5  the risk default           Definition.Risk                every caller
//
// An agent session's calls (Request.Agent) are never the person's own act:
// acting for the person they skip level 4, so medium and high risk ask even
// when the session was started from the editor or the CLI; acting for an
// app they get that app's lists, as the app would. So are an MCP server's
// sampling requests, the calls of SERVER/mcp_sampling by "mcp:SERVER" (see
// [SamplingTool]): "SERVER/mcp_sampling" and "SERVER/*" name them. Reads
// of an MCP server's resources and prompts are the reader's own calls of
// SERVER/mcp_resource and SERVER/mcp_prompt (see [ResourceTool]), decided
// like the server's tools: "SERVER/*" covers them too.
//
// The risk defaults are: low → allow, medium → ask, high → ask; a risk that
// is none of these is treated as high. The policy trusts only
// Definition.Risk as the registry set it: hints a tool gives about itself
// (MCP readOnlyHint and the like) never lower it here.
//
// Within one level a deny that matches wins over everything else that
// matches at that level; otherwise the most specific match wins, and between
// equally specific ask and allow, ask wins.
//
// Command deny rules come first, not at level 3 with the other command rules,
// so that neither an app's "allow execute_command" nor tools.policy
// "execute_command: allow" can unlock a command that a rule denies. Command
// allow rules stay below tools.policy: when tools.policy or the app's lists
// name execute_command, that entry decides every command.
//
// After the levels:
//
//   - A write to a protected path (see "Protected paths" below) is ask,
//     whatever the levels decided, unless they decided deny; a remembered
//     reject_always still denies it, a remembered allow_always does not
//     allow it, and an "always" answer to it counts once and is not
//     remembered.
//   - A remembered "always" answer (see [Approvals] and "Asking and
//     remembering") for the same party, tool and definition hash whose
//     scope covers the call turns an ask into allow or deny. It never changes
//     an allow or a deny, so it never overrides a deny from the config. A
//     stored answer for another definition hash (the tool changed) does not
//     apply.
//   - For execute_command, an allow becomes ask when the command line does
//     not parse (the deny rules could not be checked) or when a command in
//     it may match a deny rule through words that are only known when the
//     shell runs ("$X -rf /" against "rm **").
//
// # Protected paths
//
// Some files make code run later, outside every sandbox, without the
// person choosing to run it: git hooks (and .git/config, which can name
// programs git runs), VS Code tasks and settings, and the MCP files the
// McpHub, VS Code and Claude Code start servers from
// ([workspace.Launchers], the one list, read again for every call, so
// that it follows git's config). A tool call that writes one always asks
// the person:
//
//	path                      why
//	.git, .git/**             hooks run at the next commit; config names programs
//	**/.git/**                a nested repository's, when the person commits in it
//	core.hooksPath/**         the hooks directory git's config names, when in the workspace
//	.husky, .husky/**         husky's hooks (git runs them through core.hooksPath .husky/_)
//	.idea, .idea/**           JetBrains run configurations
//	.envrc                    direnv runs it when a shell enters the folder
//	.vscode/tasks.json        a task may run when the folder opens
//	.vscode/settings.json     settings name programs and their arguments
//	.vscode/mcp.json          MCP servers VS Code starts
//	.mcp.json                 MCP servers Claude Code and the McpHub start
//	.nexus/mcp.json           MCP servers the McpHub starts
//
// So does a core tool's call with the argument "executable": true
// (write_file making a program, which the person or a tool may later run
// outside every sandbox); without it, the core tools write files without
// an executable bit.
//
// The decision table, for a core tool whose kind is edit, delete or move
// (write_file, edit_file) and whose "path" argument (or any argument named
// "...Path") is one of these paths, or a directory holding one (".vscode"),
// or that has "executable": true:
//
//	levels 0–5 decide   remembered answer    decision
//	deny                (any)                deny
//	ask or allow        reject_always        deny
//	ask or allow        allow_always, none   ask (the answer counts once)
//
// With no approver attached, that ask is denied with a message saying
// approval was needed. Paths are compared cleaned ("./", "//", "." and a
// trailing "/" go) and case-folded (.VSCODE/tasks.json is asked about, as a
// case-insensitive file system would open the same file). When
// Rules.Workspace is set, a path is also checked as it resolves through the
// symlinks already in the workspace (link/pre-commit with link pointing at
// .git/hooks asks); a link swapped in between this check and the write is
// not seen by it. Without Rules.Workspace, git's config is not read: only
// the fixed paths count. MCP tools are not inspected:
// their arguments have no known meaning, and their servers were approved
// by the person.
//
// # Tool names in rules
//
// Keys of Rules.Tools and the names in an app's lists are:
//
//	read_file         the core tool read_file (core tools have no server)
//	github/list_prs   the tool list_prs of the MCP server github
//	github/*          every tool of the MCP server github
//	*/list_prs        the tool list_prs of any MCP server
//	*/*               every MCP tool
//	*                 every tool, core or MCP
//
// Specificity is the number of literal parts: a core tool name and
// "server/tool" count 2, "server/*" and "*/tool" count 1, "*/*" and "*"
// count 0.
//
// # Command rules
//
// A command rule is a pattern of words separated by spaces, without
// quoting: "*" matches exactly one word and a final "**" matches any number
// of remaining words, none included ("git status", "git log **",
// "go test **"). In .nexus/config.yaml a command rule is a tools.policy key
// "execute_command:<pattern>" (see [FromConfig]). The execute_command arguments are {command} (run by sh -c),
// parsed with mvdan.cc/sh/v3/syntax in bash mode, or {argv}, taken as is.
//
// An allow or ask rule applies only when the whole program is exactly one
// simple command: no redirections, pipes, lists (; && ||), background &,
// negation, subshells or groups, command or process substitution, no
// variable assignment in front (FOO=1 git status), and every word a plain or
// quoted literal with no parameter expansion, glob, tilde or brace; its argv
// must then equal the pattern word for word. The call must also set no env
// (an environment can change what an allowed program does). Otherwise the
// rule does not apply and the decision falls to the next level, typically
// ask.
//
// A deny rule applies when any simple command anywhere in the program —
// inside lists, pipes, substitutions, subshells, control flow — has a
// literal argv that matches it. It also looks, best effort, through
// wrappers (sudo, env, xargs, nohup, timeout and the like: every suffix of
// their arguments is tried), find -exec, shells run with a script argument
// (sh -c, bash -c) and eval, whose strings are parsed in turn; and the
// first word matches by its base name too (/bin/rm matches "rm"). This is a
// guard against mistakes, not a sandbox: a shell can always build a command
// that no static rule sees.
//
// # The web
//
// web_fetch and web_search (tools/core WebTools) are medium risk: they ask,
// unless something decides before the risk default. At level 3, a call
// whose host web.allowedDomains lists (Rules.Web: "go.dev" exactly,
// "*.python.org" every host under python.org; any port) is allowed:
// web_fetch's host is its URL's, web_search's the host of web.search.url.
// tools.policy and an app's lists come first, so "web_fetch: deny" or an
// app's deny holds for a listed host too, and "web_fetch: allow" allows
// every host. An "always" answer to web_fetch remembers the URL's host
// (not the page), and one to web_search the whole tool (its provider is
// the config's). The handler checks each redirect against the same list
// (or the host the call named) and the addresses it dials; see WebTools.
//
// # Asking and remembering
//
// When the decision is ask, [BuildICERC] builds the record the person sees
// (intent, command, expected outcome, risk assessment), with who asks
// ([Asker]) and what an "always" answer would remember ([AlwaysText]; empty
// when it counts once). Their answer goes to [Policy.Record]: an "always"
// answer remembers exactly what the prompt showed, in [Approvals], with the
// hash of the tool definition ([DefinitionHash]), so that a changed tool is
// asked about again:
//
//	tool                      remembered (Scope)                      named
//	execute_command           the argv of one plain command           execute_command:ls -la
//	                          (as a command rule matches it)
//	read_file, write_file,    the path, cleaned, as written           read_file:src/a.go
//	edit_file,                or a directory the person picked        write_file:src/**
//	list_directory,           (the editor's answer {"answer":
//	search_files              "allow_always", "directory": "src"})
//	web_fetch                 the host of the URL, in lower case      web_fetch:go.dev
//	MCP tools, sampling,      the whole tool: arguments have no       github/create_issue
//	other core tools          known meaning
//
// An execute_command program that is not one plain simple command (pipes,
// lists, redirections, expansions, globs, assignments, a parse error; see
// "Command rules"), or a call that sets env, has nothing a rule could
// match: its "always" counts once, as does an answer about a protected
// path, a path the file tools refuse, or a file tool's call without a path
// (search_files of the whole workspace; with path "." it is remembered). A remembered command covers the same
// words however quoted or given as argv, in any cwd, as a command rule
// does; a remembered path covers the same path as written, not another
// name that resolves to the same file (nor a symlink's target), and
// is compared case-sensitively.
//
// An answer is for one party: an app's covers that app's calls and the
// agent sessions acting for it; the person's covers the person's own calls
// (editor, terminal) and every agent session acting for the person (chat,
// ACP, the MCP gateway's clients); an MCP server's sampling request is
// remembered for the party of the call it came in. The prompt's Always text
// says which.
//
// A call is covered by the most specific answer for its party, tool and
// definition: its own command or path, then the deepest remembered
// directory that holds the path, then a broad answer. Broad answers come
// from an approvals file of version 1, written before answers had scopes:
// each of its execute_command and file tool answers covers every call of
// the tool, as it did then, and listings mark it broad
// ("execute_command:**"); version 1 files are read, and written as version
// 2 at the first change. Remembered answers never override a deny, and deny
// rules and the parse check still apply to a remembered command.
//
// # Reviewing a write
//
// When the tool of a call it asks about has a Preview (write_file,
// edit_file: tools.Tool.Preview), the gate asks it for the change the call
// would make before it asks the person, and puts it in the record
// (ICERC.Changes): the diff and both contents, computed by Nexus from the
// arguments and the file as the handler would find it (the definitions
// store, the editor's buffer, the disk), never the caller's word for it.
// A preview that fails (the file unreadable, oldText not found) does not
// stop the question: a risk detail says why there is no diff, and the
// call, if allowed, fails in its handler the same way. Text surfaces show
// the diff with [ChangeLines], inert and cut at [MaxChangeLines]. What the
// person was shown is what runs: the handler is given the change
// (tools.Invocation.Shown) and writes nothing when the file no longer
// holds the content the diff was computed from. A call the policy allows
// or denies outright is not previewed.
//
// # Session modes
//
// An agent session may run in a mode ([Mode], put in the call's context
// with [WithMode]) that bends the verdict of the levels above, in the
// gate only: ask asks before every call that does more than read,
// auto-edit allows the workspace edits of core tools that would be asked
// about (never a protected path), read-only denies every call that does
// more than read. No mode turns a deny into anything else; see [Mode] for
// the table.
//
// # Who may answer
//
// Every question of the daemon — a permission ([Policy.Gate]), an MCP
// server's trust (mcp.Hub.Trust), a sampling request (a call of
// [SamplingTool]), and a hub MCP server's elicitation during a call — is
// answered by the person, on their own surfaces, and by no one else:
// [MayAnswer] is the rule, and an [Approver] carries whom it answers for
// ([Approver.Who]), so that [Approvers] passes over any approver that is
// not the person, wherever it came from (the call's context, Route, Set).
// An app's question goes to the person (a terminal attached with
// [Approvers.Attach], the last one first, else the editor attached with
// [Approvers.Set]), or is denied saying "no editor is attached to ask the
// person"; an "always" that an app tried to give is never recorded.
//
//	surface (door)                              answers for       answers?
//	the editor (nexusd --stdio)                 the person        yes
//	a terminal with the admin token (nexus      the person        yes
//	  chat: gRPC Agent ask_permissions +
//	  AnswerPermission; nexus tools run;
//	  nexus calls --watch --answer: gRPC
//	  ToolManager.AnswerPermissions)
//	the person's ACP editor (nexusd acp,        the person        yes
//	  no token): session/request_permission
//	the person's MCP client (nexusd mcp or      the person        yes
//	  /mcp with the admin token; its calls
//	  are agent:mcp acting for the person):
//	  elicitation/create
//	an app's MCP client (app token):            the app           no: the editor is asked
//	  elicitation/create
//	an app's gRPC Agent prompt                  the app           no: ask_permissions and
//	  (ask_permissions, ask_elicitation)                            ask_elicitation are refused
//	an app's ExecuteToolStream                  the app           no: refused
//	  (ask_elicitation)
//	an app's ACP client (nexusd acp             the app           no: the editor is asked; the
//	  --token-file): request_permission                             MCP servers it passes wait
//	                                                                for the person
//	an MCP server, an agent for an app          not the person    no
//
// And by asking party (the one whose call it is), on every door:
//
//	asking party                asked of
//	the person (admin token)    the person's surface that made the call, else the answering terminal, else the editor
//	an agent for the person     the terminal, editor, ACP editor or MCP client that prompted it, else the answering terminal, else the editor
//	an app, with or without     the answering terminal (nexus calls --watch --answer), else the editor;
//	  grants                      never the app, whatever it declared
//	an agent for an app         the answering terminal, else the editor; never the app's client
//	an MCP server (sampling)    whoever answers for the call it came in
//
// # Checking without running
//
// [Policy.Check] answers the CoreFramework.CheckPermission RPC with the same
// rules: see its documentation for how an action maps to a tool.
package policy
