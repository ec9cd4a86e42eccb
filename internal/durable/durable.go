// Package durable makes new names in a directory reach the disk, as each
// system allows: [SyncDir] after creating, renaming or removing names,
// [Rename] to put a synced file in place. On unix a directory is fsynced.
// Windows cannot flush a directory (FlushFileBuffers needs a handle open
// for writing, which a directory does not give): there [Rename] asks
// MoveFileEx to write the rename through, names changed by other means
// are in NTFS's journal, which it commits on its own, and [SyncDir] does
// nothing.
package durable
