package auth

import (
	"net/http"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/golang-jwt/jwt/v4"
)

// clientIDSigner signs the App JWT with the App's client ID as iss, which GitHub recommends over
// the numeric App ID (ghinstallation writes the ID; the signer is the one seam it offers).
type clientIDSigner struct {
	clientID string
	rsa      ghinstallation.Signer
}

func (s clientIDSigner) Sign(claims jwt.Claims) (string, error) {
	if rc, ok := claims.(*jwt.RegisteredClaims); ok {
		c := *rc
		c.Issuer = s.clientID
		claims = &c
	}
	return s.rsa.Sign(claims)
}

// appsTransport is ghinstallation's App transport: iss is clientID when one is configured
// (github.app_client_id), else appID. key is the PEM private key.
func appsTransport(tr http.RoundTripper, appID int64, clientID string, key []byte) (*ghinstallation.AppsTransport, error) {
	if clientID == "" {
		return ghinstallation.NewAppsTransport(tr, appID, key)
	}
	k, err := jwt.ParseRSAPrivateKeyFromPEM(key)
	if err != nil {
		return nil, err
	}
	return ghinstallation.NewAppsTransportWithOptions(tr, 0,
		ghinstallation.WithSigner(clientIDSigner{clientID: clientID, rsa: ghinstallation.NewRSASigner(jwt.SigningMethodRS256, k)}))
}
