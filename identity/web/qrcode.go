package web

import (
	"fmt"
	"html/template"
	"strings"

	qrcode "github.com/skip2/go-qrcode"
)

// QRCode is text (an otpauth URI) as a QR code in inline SVG: dark
// modules drawn as one path on a white square with its quiet zone, so
// that it scans in the dark colour scheme too. Inline SVG needs no
// image source in the pages' Content-Security-Policy.
func QRCode(text string) (template.HTML, error) {
	q, err := qrcode.New(text, qrcode.Medium)
	if err != nil {
		return "", fmt.Errorf("making the QR code: %w", err)
	}
	bits := q.Bitmap() // with its quiet zone
	n := len(bits)
	var path strings.Builder
	for y, row := range bits {
		for x, dark := range row {
			if dark {
				fmt.Fprintf(&path, "M%d %dh1v1h-1z", x, y)
			}
		}
	}
	return template.HTML(fmt.Sprintf(`<svg class="qr" role="img" aria-label="QR code of the key" viewBox="0 0 %d %d" width="%d" height="%d" shape-rendering="crispEdges"><rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="%s"/></svg>`,
		n, n, n*5, n*5, n, n, path.String())), nil //nolint:gosec // built from the bitmap alone
}
