package icebergtest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// GlueServer is an in-memory stand-in for the AWS Glue Data Catalog: the
// JSON protocol (X-Amz-Target: AWSGlue.<Operation>) for the databases and
// tables an Iceberg catalog uses, with Glue's optimistic locking on
// VersionId.
//
// It serves CreateDatabase, GetDatabase, GetDatabases, UpdateDatabase,
// DeleteDatabase, CreateTable, GetTable, GetTables, UpdateTable and
// DeleteTable. Names are case-insensitive and stored in lower case, as
// Glue does. Databases and tables are kept as the DatabaseInput and
// TableInput they were given, and returned as such with their name,
// database, CatalogId (when the request had one) and, for tables, the
// VersionId: "1" on creation, one more on each update. Results come in one
// page, sorted by name; timestamps are left out. Signatures are not
// checked.
type GlueServer struct {
	// Endpoint is the server's URL, http://127.0.0.1:<port>, to be used as
	// the Glue endpoint (glue.endpoint of iceberg-go's Glue catalog).
	Endpoint string

	mu          sync.Mutex
	dbs         map[string]map[string]any // by name: the DatabaseInput
	tables      map[[2]string]*glueTable  // by database and name
	keys        []string
	failUpdates int
}

// glueTable is a stored table: its TableInput and current version.
type glueTable struct {
	input   map[string]any
	version int
}

// glueRequest holds the request fields of the operations served.
type glueRequest struct {
	CatalogID     string         `json:"CatalogId"`
	Name          string         `json:"Name"`
	DatabaseName  string         `json:"DatabaseName"`
	DatabaseInput map[string]any `json:"DatabaseInput"`
	TableInput    map[string]any `json:"TableInput"`
	VersionID     string         `json:"VersionId"`
}

// glueError is an error response: the exception's type and its message.
type glueError struct{ typ, msg string }

func (e *glueError) Error() string { return e.typ + ": " + e.msg }

// errorf returns a glueError of type typ with a formatted message.
func errorf(typ, format string, args ...any) *glueError {
	return &glueError{typ, fmt.Sprintf(format, args...)}
}

// StartGlue starts it on a free loopback port; it stops when the test ends.
func StartGlue(t testing.TB) *GlueServer {
	t.Helper()
	g := &GlueServer{dbs: map[string]map[string]any{}, tables: map[[2]string]*glueTable{}}
	srv := httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(srv.Close)
	g.Endpoint = srv.URL
	return g
}

// MetadataLocation returns the metadata_location parameter of table
// db.name, or "" when there is none.
func (g *GlueServer) MetadataLocation(db, name string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.tables[[2]string{strings.ToLower(db), strings.ToLower(name)}]
	if t == nil {
		return ""
	}
	params, _ := t.input["Parameters"].(map[string]any)
	loc, _ := params["metadata_location"].(string)
	return loc
}

// AccessKeys returns the access key ids seen in requests' SigV4
// Authorization headers, each once, in the order first seen (so tests can
// check which credentials a client used).
func (g *GlueServer) AccessKeys() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.keys)
}

// FailUpdates makes the next n UpdateTable calls fail with
// ConcurrentModificationException.
func (g *GlueServer) FailUpdates(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failUpdates = n
}

// serve answers one request: POST / with X-Amz-Target: AWSGlue.<Op> and a
// JSON body. Errors are HTTP 400 with the exception's type in the
// X-Amzn-ErrorType header and in the body's __type, as Glue sends them.
func (g *GlueServer) serve(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	// Authorization: AWS4-HMAC-SHA256 Credential=<key>/<date>/<region>/glue/aws4_request, ...
	if _, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential="); ok {
		key, _, _ := strings.Cut(cred, "/")
		if !slices.Contains(g.keys, key) {
			g.keys = append(g.keys, key)
		}
	}
	var out any
	var err error
	target := r.Header.Get("X-Amz-Target")
	op, ok := strings.CutPrefix(target, "AWSGlue.")
	var req glueRequest
	switch {
	case r.Method != http.MethodPost || !ok:
		err = errorf("UnknownOperationException", "%s %s with X-Amz-Target %q is not a Glue operation", r.Method, r.URL.Path, target)
	case json.NewDecoder(r.Body).Decode(&req) != nil:
		err = errorf("SerializationException", "the body of %s is not a JSON object", op)
	default:
		out, err = g.do(op, &req)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if e, ok := err.(*glueError); ok {
		w.Header().Set("X-Amzn-ErrorType", e.typ)
		w.WriteHeader(http.StatusBadRequest)
		out = map[string]string{"__type": e.typ, "message": e.msg}
	}
	json.NewEncoder(w).Encode(out)
}

// do runs operation op; it returns the response body or a *glueError.
func (g *GlueServer) do(op string, req *glueRequest) (any, error) {
	switch op {
	case "CreateDatabase":
		return g.createDatabase(req)
	case "GetDatabase":
		return g.getDatabase(req)
	case "GetDatabases":
		return g.getDatabases()
	case "UpdateDatabase":
		return g.updateDatabase(req)
	case "DeleteDatabase":
		return g.deleteDatabase(req)
	case "CreateTable":
		return g.createTable(req)
	case "GetTable":
		return g.getTable(req)
	case "GetTables":
		return g.getTables(req)
	case "UpdateTable":
		return g.updateTable(req)
	case "DeleteTable":
		return g.deleteTable(req)
	default:
		return nil, errorf("UnknownOperationException", "the fake Glue catalog does not serve AWSGlue.%s", op)
	}
}

// createDatabase stores DatabaseInput under its name, which must be new.
func (g *GlueServer) createDatabase(req *glueRequest) (any, error) {
	name := strings.ToLower(str(req.DatabaseInput, "Name"))
	if name == "" {
		return nil, errorf("InvalidInputException", "DatabaseInput.Name is required")
	}
	if g.dbs[name] != nil {
		return nil, errorf("AlreadyExistsException", "Database %s already exists.", name)
	}
	g.dbs[name] = stamp(req.DatabaseInput, req, name)
	return struct{}{}, nil
}

// getDatabase returns the database Name.
func (g *GlueServer) getDatabase(req *glueRequest) (any, error) {
	db, err := g.database(req.Name)
	if err != nil {
		return nil, err
	}
	return map[string]any{"Database": db}, nil
}

// getDatabases returns every database, sorted by name.
func (g *GlueServer) getDatabases() (any, error) {
	list := []map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(g.dbs)) {
		list = append(list, g.dbs[name])
	}
	return map[string]any{"DatabaseList": list}, nil
}

// updateDatabase replaces the database Name, which must exist, with
// DatabaseInput.
func (g *GlueServer) updateDatabase(req *glueRequest) (any, error) {
	name := strings.ToLower(req.Name)
	if _, err := g.database(name); err != nil {
		return nil, err
	}
	g.dbs[name] = stamp(req.DatabaseInput, req, name)
	return struct{}{}, nil
}

// deleteDatabase deletes the database Name and its tables.
func (g *GlueServer) deleteDatabase(req *glueRequest) (any, error) {
	name := strings.ToLower(req.Name)
	if _, err := g.database(name); err != nil {
		return nil, err
	}
	delete(g.dbs, name)
	for key := range g.tables {
		if key[0] == name {
			delete(g.tables, key) // Glue deletes a database's tables with it
		}
	}
	return struct{}{}, nil
}

// createTable stores TableInput, at version 1, in DatabaseName under its
// name, which must be new.
func (g *GlueServer) createTable(req *glueRequest) (any, error) {
	key, err := g.tableKey(req.DatabaseName, str(req.TableInput, "Name"))
	if err != nil {
		return nil, err
	}
	if g.tables[key] != nil {
		return nil, errorf("AlreadyExistsException", "Table %s already exists.", key[1])
	}
	g.tables[key] = &glueTable{input: stamp(req.TableInput, req, key[1]), version: 1}
	return struct{}{}, nil
}

// getTable returns the table DatabaseName.Name.
func (g *GlueServer) getTable(req *glueRequest) (any, error) {
	key, t, err := g.table(req.DatabaseName, req.Name)
	if err != nil {
		return nil, err
	}
	return map[string]any{"Table": t.output(key)}, nil
}

// getTables returns the tables of DatabaseName, sorted by name.
func (g *GlueServer) getTables(req *glueRequest) (any, error) {
	db := strings.ToLower(req.DatabaseName)
	if _, err := g.database(db); err != nil {
		return nil, err
	}
	var names []string
	for key := range g.tables {
		if key[0] == db {
			names = append(names, key[1])
		}
	}
	list := []map[string]any{}
	slices.Sort(names)
	for _, name := range names {
		key := [2]string{db, name}
		list = append(list, g.tables[key].output(key))
	}
	return map[string]any{"TableList": list}, nil
}

// updateTable replaces the table named in TableInput with it and counts
// one more version, unless FailUpdates asked for a failure or the request's
// VersionId is not the table's.
func (g *GlueServer) updateTable(req *glueRequest) (any, error) {
	key, t, err := g.table(req.DatabaseName, str(req.TableInput, "Name"))
	if err != nil {
		return nil, err
	}
	if g.failUpdates > 0 {
		g.failUpdates--
		return nil, errorf("ConcurrentModificationException", "Update table failed due to concurrent modifications.")
	}
	if req.VersionID != "" && req.VersionID != strconv.Itoa(t.version) {
		return nil, errorf("ConcurrentModificationException", "Table %s.%s is at version %d, not %s.", key[0], key[1], t.version, req.VersionID)
	}
	t.input = stamp(req.TableInput, req, key[1])
	t.version++
	return struct{}{}, nil
}

// deleteTable deletes the table DatabaseName.Name.
func (g *GlueServer) deleteTable(req *glueRequest) (any, error) {
	key, _, err := g.table(req.DatabaseName, req.Name)
	if err != nil {
		return nil, err
	}
	delete(g.tables, key)
	return struct{}{}, nil
}

// stamp returns input (a new map when nil) with its Name set to name and,
// when the request names a catalog, its CatalogId.
func stamp(input map[string]any, req *glueRequest, name string) map[string]any {
	if input == nil {
		input = map[string]any{}
	}
	input["Name"] = name
	if req.CatalogID != "" {
		input["CatalogId"] = req.CatalogID
	}
	return input
}

// database returns the database name, or EntityNotFoundException.
func (g *GlueServer) database(name string) (map[string]any, error) {
	db := g.dbs[strings.ToLower(name)]
	if db == nil {
		return nil, errorf("EntityNotFoundException", "Database %s not found.", name)
	}
	return db, nil
}

// tableKey returns the key of table db.name, whose database must exist.
func (g *GlueServer) tableKey(db, name string) ([2]string, error) {
	if _, err := g.database(db); err != nil {
		return [2]string{}, err
	}
	if name == "" {
		return [2]string{}, errorf("InvalidInputException", "a table name is required")
	}
	return [2]string{strings.ToLower(db), strings.ToLower(name)}, nil
}

// table returns the key and the table db.name, or EntityNotFoundException.
func (g *GlueServer) table(db, name string) ([2]string, *glueTable, error) {
	key, err := g.tableKey(db, name)
	if err != nil {
		return key, nil, err
	}
	t := g.tables[key]
	if t == nil {
		return key, nil, errorf("EntityNotFoundException", "Table %s not found.", key[1])
	}
	return key, t, nil
}

// output returns the table as Glue's Table shape: the stored TableInput
// with its database and VersionId.
func (t *glueTable) output(key [2]string) map[string]any {
	out := maps.Clone(t.input)
	out["DatabaseName"] = key[0]
	out["VersionId"] = strconv.Itoa(t.version)
	return out
}

// str returns the string field of m, or "".
func str(m map[string]any, field string) string {
	s, _ := m[field].(string)
	return s
}
