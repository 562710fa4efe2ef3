package github

import "os"

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content+"\n"), 0o600) }
