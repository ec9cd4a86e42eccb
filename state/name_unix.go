//go:build unix

package state

// CheckName refuses a path component that the system would read as
// something else than the name given: none on unix (see name_windows.go).
func CheckName(string) error { return nil }
