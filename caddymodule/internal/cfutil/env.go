package cfutil

import (
	"fmt"
	"os"
)

// Env reads the environment variable that a configuration field (field,
// such as "dsn_env") names. A value that cannot be a variable's name
// (letters, digits and '_', not starting with a digit) is refused and not
// looked up. Errors quote the name only when it is at most 40 characters:
// an operator may have put the secret itself in the field, and a DSN
// cannot be a name, nor can a 32-byte key be that short in any encoding
// the key accepts.
func Env(field, name string) (string, error) {
	if !envName(name) {
		return "", fmt.Errorf("%s does not hold the name of an environment variable (letters, digits and _): give the variable's name, not its value", field)
	}
	v := os.Getenv(name)
	if v == "" {
		if len(name) <= 40 {
			return "", fmt.Errorf("%s: the environment variable %s is not set or empty", field, name)
		}
		return "", fmt.Errorf("%s: the environment variable it names is not set or empty", field)
	}
	return v, nil
}

func envName(s string) bool {
	for i, c := range []byte(s) {
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return s != ""
}
