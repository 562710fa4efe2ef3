package config

import (
	"fmt"
	"regexp"
)

// appClientID is the form of a GitHub App's client ID: "Iv1." and 16 hex digits for older Apps,
// "Iv23" and 16 letters or digits for Apps since 2024. An OAuth App's client ID (Ov23...) or a
// numeric App ID is not one.
var appClientID = regexp.MustCompile(`^Iv[0-9A-Za-z.]{4,60}$`)

// appIdentity checks that the App is named exactly once, by app_id or by app_client_id: either is
// the App JWT's iss (TestValidate, "app" rows).
// key makes a key's path in the section checked ("github.app_id", "account.2.app_id"); label
// prefixes its messages ("github.", `account "ci": `).
func (c *checker) appIdentity(g GitHub, key func(string) string, label string) {
	switch {
	case g.AppID != 0 && g.AppClientID != "":
		c.add(SeverityError, key("app_client_id"), fmt.Sprintf("set %sapp_id or %sapp_client_id, not both: they name the same App (GitHub recommends the client ID)", label, label))
	case g.AppClientID != "" && !appClientID.MatchString(g.AppClientID):
		c.add(SeverityError, key("app_client_id"), fmt.Sprintf("%sapp_client_id %q is not a GitHub App client ID: copy the \"Client ID\" (Iv23...) from the App's settings page, or set the numeric %sapp_id instead", label, g.AppClientID, label))
	case g.AppClientID == "" && g.AppID <= 0:
		c.add(SeverityError, key("app_id"), fmt.Sprintf("%sapp_id must be the GitHub App's positive ID (got %d), or set %sapp_client_id instead", label, g.AppID, label))
	}
}
