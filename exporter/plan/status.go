package plan

import (
	"errors"
	"os"
)

// EnvStatus says whether the environment variable name is "set", "set but
// empty" or "not set": what a plan may show of a secret.
func EnvStatus(name string) string {
	v, ok := os.LookupEnv(name)
	switch {
	case !ok:
		return "not set"
	case v == "":
		return "set but empty"
	}
	return "set"
}

// FileStatus says whether the file at path is "readable", "missing" or
// "not readable"; "" for no path.
func FileStatus(path string) string {
	if path == "" {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "missing"
		}
		return "not readable"
	}
	f.Close()
	return "readable"
}
