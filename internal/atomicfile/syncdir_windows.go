//go:build windows

package atomicfile

// dirSyncable is false on Windows: a directory cannot be flushed there (FlushFileBuffers on a
// directory handle is "Access is denied", as microsoft/go#1907 reports on Windows 11, and wine
// 8.0 says the same), and NTFS journals a rename as metadata: there is no per-directory flush to
// ask for. Every atomicfile.Write failed on Windows while SyncDir tried.
const dirSyncable = false
