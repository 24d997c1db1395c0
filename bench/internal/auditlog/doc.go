// Package auditlog reads what a benchmark's gatehouse wrote to its audit
// log, so that a benchmark measuring the audit can show that it was on and
// what it wrote. It depends on the audit package only.
package auditlog
