package command

// HelperArg is the first argument that makes nexusd run as the command
// helper; its main calls [HelperMain] when os.Args[1] == HelperArg.
const HelperArg = "__nexus-sandbox-exec"
