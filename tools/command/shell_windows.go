package command

// Shell is how a command line runs here, in words for a tool's
// description and a prompt (see plain_windows.go for why cmd.exe).
const Shell = "cmd.exe /d /s /c"

// ShellArgv is the program and arguments that run script as a command line
// here, for a terminal that finds cmd.exe itself: cmd.exe /d /s /c SCRIPT.
func ShellArgv(script string) []string { return []string{"cmd.exe", "/d", "/s", "/c", script} }
