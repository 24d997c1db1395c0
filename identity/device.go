package identity

import (
	"fmt"
	"net/http"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/device"
	"github.com/gatehouse/gatehouse/identity/session"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/web"
)

// PathDeviceVerification is the device flow's verification page (RFC 8628
// §3.3, the verification_uri), under the issuer.
const PathDeviceVerification = "/connect/device"

// deviceStore is the store's device role, or nil when the backend does
// not implement it.
func deviceStore(st store.Store) store.DeviceStore {
	ds, _ := st.(store.DeviceStore)
	return ds
}

// routeDevice adds the device authorization endpoint and its verification
// page when the store keeps device authorizations and the browser flows'
// records (the page logs the user in); otherwise the endpoint answers 501,
// and the log says why.
func (s *Server) routeDevice(prefix string, secret []byte, sessions *session.Manager, guard *session.Guard, pages *web.Pages) error {
	ds := deviceStore(s.store)
	if ds == nil || sessions == nil {
		s.log.Warn("the store does not implement the device flow's role (store.DeviceStore): "+
			"the device authorization endpoint and the device_code grant are not available",
			zap.String("store", fmt.Sprintf("%T", s.store)))
		s.endpoints[prefix+PathDeviceAuthorize] = s.notAvailable("device-authorization")
		return nil
	}
	ep, err := device.New(device.Config{
		Issuer: s.cfg.Issuer, VerificationPath: prefix + PathDeviceVerification, Clients: s.clients,
		Store: deviceBacked{ds, s.store}, Users: s.store, Sessions: sessions, Guard: guard, Passwords: s.passwords,
		Pages: pages, UserCodeKey: derive(secret, "device user code"), ClientIP: s.cfg.ClientIP,
		Lifetime: s.cfg.DeviceCodeLifetime, Interval: s.cfg.DevicePollInterval, Limits: s.cfg.DeviceEntryLimits,
		HSTS: s.cfg.HSTS, UniformErrorStatus: s.cfg.UniformErrorStatus, Failed: s.countFailed,
		Logger: s.log, Audit: s.audit, Now: s.cfg.Now,
	})
	if err != nil {
		return err
	}
	s.endpoints[prefix+PathDeviceAuthorize] = ep
	s.endpoints[prefix+PathDeviceVerification] = http.HandlerFunc(ep.ServeVerification)
	return nil
}

// deviceBacked is the device role with the store's counters.
type deviceBacked struct {
	store.DeviceCodes
	store.Counters
}
