/*
 * bcryptprimitives.dll for wine 8.0: the one export Go's Windows runtime needs from it.
 *
 * Go 1.22 and later seed their random source at start with ProcessPrng from bcryptprimitives.dll
 * (runtime/os_windows.go); wine 8.0 (Debian bookworm) ships no such export, so every Go Windows
 * binary dies before main with "bcryptprimitives.dll not found". This DLL supplies ProcessPrng
 * through RtlGenRandom (advapi32's SystemFunction036), which wine has. It is test scaffolding for
 * running runner-manager.exe under wine (docs/testing.md, "Windows binaries under wine") and is
 * never shipped. `make wine-tools` builds it with gcc-mingw-w64-x86-64 and places it in the wine
 * prefix's system32; WINEDLLOVERRIDES=bcryptprimitives=n makes wine load it instead of its builtin.
 */
#include <windows.h>

/* advapi32's SystemFunction036, declared here: mingw's ntsecapi.h spells it RtlGenRandom only
 * under a macro some versions lack. */
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

/* ProcessPrng fills buf with len random bytes; Windows documents it as always returning TRUE. Large
 * requests are fed in ULONG-sized pieces because RtlGenRandom takes a ULONG length. */
BOOL WINAPI ProcessPrng(PBYTE buf, SIZE_T len)
{
	while (len > 0) {
		ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
		if (!SystemFunction036(buf, n))
			return FALSE;
		buf += n;
		len -= n;
	}
	return TRUE;
}

BOOL WINAPI DllMain(HINSTANCE inst, DWORD reason, LPVOID reserved)
{
	(void)inst;
	(void)reason;
	(void)reserved;
	return TRUE;
}
