package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// maxPasswordInput bounds what readPassword reads.
const maxPasswordInput = 4096

// readPassword reads a password: prompted for without echo (twice when
// confirm is set) when in is a terminal, else the first line of in.
func readPassword(in io.Reader, prompt io.Writer, confirm bool) (string, error) {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		pw, err := promptPassword(f, prompt, "Password: ")
		if err != nil {
			return "", err
		}
		if confirm {
			again, err := promptPassword(f, prompt, "Repeat password: ")
			if err != nil {
				return "", err
			}
			if again != pw {
				return "", errors.New("the passwords differ")
			}
		}
		return pw, nil
	}
	line, err := bufio.NewReader(io.LimitReader(in, maxPasswordInput)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("reading password: %w", err)
	}
	if err != nil && len(line) == maxPasswordInput {
		return "", fmt.Errorf("reading password: longer than %d bytes", maxPasswordInput)
	}
	pw := strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if pw == "" {
		return "", errors.New("empty password on standard input")
	}
	return pw, nil
}

// promptPassword reads one password from the terminal f without echo.
func promptPassword(f *os.File, prompt io.Writer, text string) (string, error) {
	fmt.Fprint(prompt, text)
	b, err := term.ReadPassword(int(f.Fd()))
	fmt.Fprintln(prompt)
	if err != nil {
		return "", fmt.Errorf("reading password: %w", err)
	}
	if len(b) == 0 {
		return "", errors.New("empty password")
	}
	return string(b), nil
}
