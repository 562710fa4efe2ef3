package container

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/docker/docker/api/types/registry"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/redact"
)

// dockerHubKeys are the names `docker login` files Docker Hub's credentials under.
var dockerHubKeys = []string{"https://index.docker.io/v1/", "index.docker.io", "docker.io", "registry-1.docker.io"}

// authFile is the part of a `docker login` config.json that holds credentials.
type authFile struct {
	Auths map[string]authEntry `json:"auths"`
}

type authEntry struct {
	Auth          string `json:"auth"` // base64 of user:password
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
}

// registryAuth reads the registry_auth_file at path (checked as every credential file is) and
// returns the X-Registry-Auth value for domain. Every credential it finds is taught to red first,
// so none can reach a log or a status line; errors name the file and the registry, never a value.
func registryAuth(path, domain string, red *redact.Redactor) (string, error) {
	if _, err := config.CheckSecretFile(path); err != nil {
		return "", fmt.Errorf("registry_auth_file: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read registry_auth_file %s: %w", path, err)
	}
	var f authFile
	if err := json.Unmarshal(data, &f); err != nil {
		// The decoder's message can quote the file; say where, not what.
		return "", fmt.Errorf("registry_auth_file %s is not a docker login config.json (JSON with an \"auths\" object): write it with docker login, or by hand as {\"auths\": {\"%s\": {\"auth\": \"<base64 of user:password>\"}}}", path, domain)
	}
	for _, e := range f.Auths {
		red.Learn(e.Auth, e.Password, e.IdentityToken)
		if user, pass, ok := decodeAuth(e.Auth); ok {
			red.Learn(pass, user+":"+pass)
		}
	}
	e, ok := lookupAuth(f.Auths, domain)
	if !ok {
		return "", fmt.Errorf("registry_auth_file %s has no credentials for the registry %s (it has %s): docker login %s, or add an \"auths\" entry for it", path, domain, strings.Join(registries(f.Auths), ", "), domain)
	}
	ac := registry.AuthConfig{Username: e.Username, Password: e.Password, IdentityToken: e.IdentityToken, ServerAddress: domain}
	if e.Auth != "" {
		user, pass, ok := decodeAuth(e.Auth)
		if !ok {
			return "", fmt.Errorf("registry_auth_file %s: the \"auth\" of %s is not base64 of user:password: docker login %s again", path, domain, domain)
		}
		ac.Username, ac.Password = user, pass
	}
	if ac.Username == "" && ac.IdentityToken == "" {
		return "", fmt.Errorf("registry_auth_file %s: the entry of %s has neither auth, username nor identitytoken (a credential helper's entry is not supported: write the credentials in the file)", path, domain)
	}
	return registry.EncodeAuthConfig(ac)
}

// lookupAuth finds domain's entry: by its name, its URL forms, or Docker Hub's aliases.
func lookupAuth(auths map[string]authEntry, domain string) (authEntry, bool) {
	keys := []string{domain}
	if domain == "docker.io" {
		keys = dockerHubKeys
	}
	for key, e := range auths {
		host := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://"), "/")
		for _, k := range keys {
			if key == k || host == k || strings.HasPrefix(host, k+"/") {
				return e, true
			}
		}
	}
	return authEntry{}, false
}

func registries(auths map[string]authEntry) []string {
	if len(auths) == 0 {
		return []string{"none"}
	}
	return slices.Sorted(maps.Keys(auths))
}

// decodeAuth splits a config.json "auth" value (base64 of user:password).
func decodeAuth(s string) (user, pass string, ok bool) {
	if s == "" {
		return "", "", false
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", "", false
	}
	return strings.Cut(string(b), ":")
}
