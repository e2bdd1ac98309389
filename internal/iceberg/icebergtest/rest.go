package icebergtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// RESTServer serves the Iceberg REST catalog protocol over another catalog
// (in tests, iceberg-go's SQL catalog over sqlite), so the REST client of
// iceberg-go can be tested against a real HTTP server. It only speaks the
// protocol: the wrapped catalog writes the table metadata files, and the
// client writes data files, manifests and manifest lists through its own
// file IO, configured by the client's catalog properties (the server vends
// no storage configuration or credentials).
type RESTServer struct {
	// URL is the catalog's base URI, http://127.0.0.1:<port>, to give to
	// rest.NewCatalog or as the "uri" catalog property.
	URL string

	cat   catalog.Catalog
	token string

	mu          sync.Mutex
	failCommits int
	requests    map[string]int
}

// restRoute is an endpoint of the REST spec, its path relative to /v1/.
type restRoute struct {
	method, path string
	handle       func(s *RESTServer, w http.ResponseWriter, r *http.Request) error
}

// restRoutes are the endpoints served, besides GET /v1/config. All of them
// are advertised in the config's "endpoints", so the client uses HEAD for
// existence checks.
var restRoutes = []restRoute{
	{"GET", "namespaces", (*RESTServer).listNamespaces},
	{"POST", "namespaces", (*RESTServer).createNamespace},
	{"GET", "namespaces/{namespace}", (*RESTServer).loadNamespace},
	{"HEAD", "namespaces/{namespace}", (*RESTServer).namespaceExists},
	{"DELETE", "namespaces/{namespace}", (*RESTServer).dropNamespace},
	{"POST", "namespaces/{namespace}/properties", (*RESTServer).updateNamespace},
	{"GET", "namespaces/{namespace}/tables", (*RESTServer).listTables},
	{"POST", "namespaces/{namespace}/tables", (*RESTServer).createTable},
	{"GET", "namespaces/{namespace}/tables/{table}", (*RESTServer).loadTable},
	{"HEAD", "namespaces/{namespace}/tables/{table}", (*RESTServer).tableExists},
	{"POST", "namespaces/{namespace}/tables/{table}", (*RESTServer).commitTable},
	{"DELETE", "namespaces/{namespace}/tables/{table}", (*RESTServer).dropTable},
}

// StartREST starts a REST catalog on a free loopback port that serves cat;
// it stops when the test ends. When token is not empty, every request must
// carry "Authorization: Bearer <token>", else it is answered 401 with the
// REST error model (NotAuthorizedException).
func StartREST(t testing.TB, cat catalog.Catalog, token string) *RESTServer {
	t.Helper()
	s := &RESTServer{cat: cat, token: token, requests: map[string]int{}}
	mux := http.NewServeMux()
	endpoints := make([]string, 0, len(restRoutes))
	for _, rt := range restRoutes {
		endpoints = append(endpoints, rt.method+" /v1/{prefix}/"+rt.path)
		mux.HandleFunc(rt.method+" /v1/"+rt.path, s.serve(rt.handle))
	}
	config := map[string]any{"defaults": map[string]string{}, "overrides": map[string]string{}, "endpoints": endpoints}
	mux.HandleFunc("GET /v1/config", s.serve(func(_ *RESTServer, w http.ResponseWriter, _ *http.Request) error {
		return restReply(w, config)
	}))
	mux.HandleFunc("/", s.serve(func(_ *RESTServer, _ http.ResponseWriter, r *http.Request) error {
		return &restError{http.StatusBadRequest, "BadRequestException", "no endpoint " + r.Method + " " + r.URL.Path}
	}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Requests returns how many requests of each endpoint were served, keyed by
// "METHOD /v1/path-pattern", such as
// "POST /v1/namespaces/{namespace}/tables/{table}" for table commits. Requests
// that match no endpoint count under "/".
func (s *RESTServer) Requests() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.requests)
}

// FailCommits makes the next n table commits fail with 409
// CommitFailedException before they reach the catalog, as a concurrent
// writer's commit would.
func (s *RESTServer) FailCommits(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failCommits = n
}

// serve counts a request, checks its token and writes h's error, if any,
// in the REST error model.
func (s *RESTServer) serve(h func(*RESTServer, http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests[r.Pattern]++
		s.mu.Unlock()
		var err error
		if s.token != "" && r.Header.Get("Authorization") != "Bearer "+s.token {
			err = &restError{http.StatusUnauthorized, "NotAuthorizedException", "missing or wrong bearer token"}
		} else {
			err = h(s, w, r)
		}
		if err == nil {
			return
		}
		re := toRESTError(err)
		if r.Method == http.MethodHead {
			w.WriteHeader(re.code)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(re.code)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
			"message": re.msg, "type": re.typ, "code": re.code,
		}})
	}
}

// restError is an error response: HTTP status, error type and message.
type restError struct {
	code     int
	typ, msg string
}

func (e *restError) Error() string { return fmt.Sprintf("%d %s: %s", e.code, e.typ, e.msg) }

// toRESTError maps a catalog's error to the REST error the client maps
// back to the same sentinel error.
func toRESTError(err error) *restError {
	var re *restError
	if errors.As(err, &re) {
		return re
	}
	e := func(code int, typ string) *restError { return &restError{code, typ, err.Error()} }
	switch {
	case errors.Is(err, catalog.ErrNoSuchTable):
		return e(http.StatusNotFound, "NoSuchTableException")
	case errors.Is(err, catalog.ErrNoSuchNamespace):
		return e(http.StatusNotFound, "NoSuchNamespaceException")
	case errors.Is(err, catalog.ErrNamespaceAlreadyExists), errors.Is(err, catalog.ErrTableAlreadyExists):
		return e(http.StatusConflict, "AlreadyExistsException")
	case errors.Is(err, catalog.ErrNamespaceNotEmpty):
		return e(http.StatusConflict, "NamespaceNotEmptyException")
	// The SQL catalog reports a requirement that does not hold (a
	// concurrent commit) as a plain error.
	case errors.Is(err, table.ErrCommitFailed), strings.Contains(err.Error(), "requirement failed"):
		return e(http.StatusConflict, "CommitFailedException")
	case errors.Is(err, iceberg.ErrInvalidArgument):
		return e(http.StatusBadRequest, "BadRequestException")
	}
	return e(http.StatusInternalServerError, "InternalServerError")
}

// restReply writes v as a 200 JSON response.
func restReply(w http.ResponseWriter, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	_, err = w.Write(b)
	return err
}

// restDecode reads r's JSON body into v.
func restDecode(r *http.Request, v any) error {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		return &restError{http.StatusBadRequest, "BadRequestException", "malformed request body: " + err.Error()}
	}
	return nil
}

// restNamespace is the {namespace} of r's path, whose levels are separated by
// the unit separator (%1F on the wire; the mux unescapes it).
func restNamespace(r *http.Request) table.Identifier {
	return strings.Split(r.PathValue("namespace"), "\x1f")
}

// restIdent is the identifier of the {namespace} and {table} of r's path.
func restIdent(r *http.Request) table.Identifier {
	return append(restNamespace(r), r.PathValue("table"))
}

// restName is a table identifier in the REST model.
type restName struct {
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

func (s *RESTServer) listNamespaces(w http.ResponseWriter, r *http.Request) error {
	var parent table.Identifier
	if p := r.URL.Query().Get("parent"); p != "" {
		parent = strings.Split(p, "\x1f")
	}
	nss, err := s.cat.ListNamespaces(r.Context(), parent)
	if err != nil {
		return err
	}
	if nss == nil {
		nss = []table.Identifier{}
	}
	return restReply(w, map[string]any{"namespaces": nss})
}

func (s *RESTServer) createNamespace(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Namespace  table.Identifier   `json:"namespace"`
		Properties iceberg.Properties `json:"properties"`
	}
	if err := restDecode(r, &req); err != nil {
		return err
	}
	if err := s.cat.CreateNamespace(r.Context(), req.Namespace, req.Properties); err != nil {
		return err
	}
	return restReply(w, req)
}

func (s *RESTServer) loadNamespace(w http.ResponseWriter, r *http.Request) error {
	props, err := s.cat.LoadNamespaceProperties(r.Context(), restNamespace(r))
	if err != nil {
		return err
	}
	return restReply(w, map[string]any{"namespace": restNamespace(r), "properties": props})
}

func (s *RESTServer) namespaceExists(w http.ResponseWriter, r *http.Request) error {
	ok, err := s.cat.CheckNamespaceExists(r.Context(), restNamespace(r))
	return restExists(w, ok, err, catalog.ErrNoSuchNamespace)
}

// restExists answers an existence check: 204 when ok, else 404.
func restExists(w http.ResponseWriter, ok bool, err, missing error) error {
	switch {
	case err != nil:
		return err
	case !ok:
		return missing
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *RESTServer) dropNamespace(w http.ResponseWriter, r *http.Request) error {
	return restNoContent(w, s.cat.DropNamespace(r.Context(), restNamespace(r)))
}

// restNoContent answers 204 when err is nil.
func restNoContent(w http.ResponseWriter, err error) error {
	if err == nil {
		w.WriteHeader(http.StatusNoContent)
	}
	return err
}

func (s *RESTServer) updateNamespace(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Removals []string           `json:"removals"`
		Updates  iceberg.Properties `json:"updates"`
	}
	if err := restDecode(r, &req); err != nil {
		return err
	}
	sum, err := s.cat.UpdateNamespaceProperties(r.Context(), restNamespace(r), req.Removals, req.Updates)
	if err != nil {
		return err
	}
	return restReply(w, sum)
}

func (s *RESTServer) listTables(w http.ResponseWriter, r *http.Request) error {
	ids := []restName{}
	for id, err := range s.cat.ListTables(r.Context(), restNamespace(r)) {
		if err != nil {
			return err
		}
		ids = append(ids, restName{catalog.NamespaceFromIdent(id), catalog.TableNameFromIdent(id)})
	}
	return restReply(w, map[string]any{"identifiers": ids})
}

func (s *RESTServer) createTable(w http.ResponseWriter, r *http.Request) error {
	// The spec and the order refer to the request's schema, by the
	// client's numbering: they are bound when the catalog builds the
	// table's metadata.
	var req struct {
		Name        string                        `json:"name"`
		Location    string                        `json:"location"`
		Schema      *iceberg.Schema               `json:"schema"`
		Spec        *iceberg.UnboundPartitionSpec `json:"partition-spec"`
		WriteOrder  *table.UnboundSortOrder       `json:"write-order"`
		StageCreate bool                          `json:"stage-create"`
		Properties  iceberg.Properties            `json:"properties"`
	}
	if err := restDecode(r, &req); err != nil {
		return err
	}
	if req.Schema == nil || req.Name == "" {
		return &restError{http.StatusBadRequest, "BadRequestException", "create table: name and schema are required"}
	}
	if req.StageCreate {
		return &restError{http.StatusNotImplemented, "NotImplementedException", "staged table creation is not supported"}
	}
	opts := []catalog.CreateTableOpt{catalog.WithProperties(req.Properties)}
	if req.Location != "" {
		opts = append(opts, catalog.WithLocation(req.Location))
	}
	if req.Spec != nil {
		opts = append(opts, catalog.WithPartitionSpec(&req.Spec.PartitionSpec))
	}
	if req.WriteOrder != nil {
		opts = append(opts, catalog.WithSortOrder(req.WriteOrder.SortOrder))
	}
	tbl, err := s.cat.CreateTable(r.Context(), append(restNamespace(r), req.Name), req.Schema, opts...)
	if err != nil {
		return err
	}
	return restReplyTable(w, tbl)
}

// restReplyTable writes the LoadTableResult of tbl.
func restReplyTable(w http.ResponseWriter, tbl *table.Table) error {
	return restReply(w, map[string]any{
		"metadata-location": tbl.MetadataLocation(),
		"metadata":          tbl.Metadata(),
		"config":            map[string]string{},
	})
}

func (s *RESTServer) loadTable(w http.ResponseWriter, r *http.Request) error {
	tbl, err := s.cat.LoadTable(r.Context(), restIdent(r))
	if err != nil {
		return err
	}
	return restReplyTable(w, tbl)
}

func (s *RESTServer) tableExists(w http.ResponseWriter, r *http.Request) error {
	ok, err := s.cat.CheckTableExists(r.Context(), restIdent(r))
	return restExists(w, ok, err, catalog.ErrNoSuchTable)
}

func (s *RESTServer) commitTable(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Identifier   *restName          `json:"identifier"`
		Requirements table.Requirements `json:"requirements"`
		Updates      table.Updates      `json:"updates"`
	}
	if err := restDecode(r, &req); err != nil {
		return err
	}
	s.mu.Lock()
	fail := s.failCommits > 0
	if fail {
		s.failCommits--
	}
	s.mu.Unlock()
	if fail {
		return &restError{http.StatusConflict, "CommitFailedException", "commit failed on purpose (FailCommits)"}
	}
	meta, loc, err := s.cat.CommitTable(r.Context(), restIdent(r), req.Requirements, req.Updates)
	if err != nil {
		return err
	}
	return restReply(w, map[string]any{"metadata-location": loc, "metadata": meta})
}

func (s *RESTServer) dropTable(w http.ResponseWriter, r *http.Request) error {
	if p, ok := s.cat.(catalog.PurgeableTable); ok && r.URL.Query().Get("purgeRequested") == "true" {
		return restNoContent(w, p.PurgeTable(r.Context(), restIdent(r)))
	}
	return restNoContent(w, s.cat.DropTable(r.Context(), restIdent(r)))
}
