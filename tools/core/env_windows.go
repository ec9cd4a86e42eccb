package core

// systemEnv are the variables Windows programs need to start and find
// their files (cmd.exe, a temporary directory, the user's profile), passed
// to every command beside tools.envAllowlist; none of them holds a secret.
var systemEnv = []string{"SystemRoot", "SystemDrive", "windir", "ComSpec", "PATHEXT", "TEMP", "TMP",
	"USERPROFILE", "APPDATA", "LOCALAPPDATA", "ProgramData", "ProgramFiles", "ProgramFiles(x86)", "NUMBER_OF_PROCESSORS", "PROCESSOR_ARCHITECTURE"}
