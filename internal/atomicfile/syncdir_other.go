//go:build !windows

package atomicfile

// dirSyncable: Linux and macOS make a rename durable by an fsync of its directory.
const dirSyncable = true
