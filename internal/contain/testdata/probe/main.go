// Command probe calls contain.Point, for the test that proves a default
// build holds no fault hook.
package main

import "github.com/gatehouse/gatehouse/internal/contain"

func main() { contain.Point("probe") }
