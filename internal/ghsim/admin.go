package ghsim

import "net/http"

func (s *Server) adminRoutes(p *http.ServeMux) {}
