-- The demo's query database (docs/design.md, "The demo"). DEMO-ONLY: made-up, public data.
--
-- The query service creates its SQLite database from this script on first start
-- (sqliteengine.Config.Init, with querydb.SQL). Tables and the scope each needs follow
-- docs/protocol.md, "Query service (IQ)":
--   Service/Market   Market, Security
--   Service/News     News, NewsSources
--   Service/Trading  Account, "Order" (rows per user: Owner is the user's subject id)
-- CatalogueTable is not a table: the query handler serves it from the catalog.
--
-- Conventions: times are ISO 8601 text in UTC ('2026-11-21T10:30:00Z'); prices and
-- balances are DECIMAL columns, which SQLite stores as REAL (a double): '152.3000' is
-- stored as 152.3. Account.InternalRef and Order.RoutingNote are back-office columns that
-- a policy can hide.
--
-- Security.Exchange is each row's venue, as the market-data backend spells it (BHP.ASX):
-- the demo's policy names it (venue_column), so a caller reads the securities of the
-- venues its token holds (ASX and NZX in the demo; the NYSE and LSE rows are of venues
-- no demo user holds).
--
-- Owners are the subject ids of the demo users (examples/users.json):
--   demo    5d1c6f2e-8a4b-4c1e-9f3a-2b7d8e6c4a10
--   trader  a3e8b7d4-2c6f-4e91-b5d0-7f1a9c3e6b28
-- and the client ID of the demo-trading-desk client (Caddyfile.example), the sub of its
-- client_credentials tokens:
--   demo-trading-desk

CREATE TABLE Market (
	Code    TEXT PRIMARY KEY,
	Name    TEXT NOT NULL,
	Country TEXT NOT NULL
);

CREATE TABLE Security (
	Code      TEXT NOT NULL,
	Exchange  TEXT NOT NULL REFERENCES Market (Code),
	Name      TEXT NOT NULL,
	LastPrice DECIMAL(12, 4),
	Currency  TEXT NOT NULL,
	Volume    INTEGER NOT NULL DEFAULT 0,
	Updated   DATETIME NOT NULL,
	PRIMARY KEY (Code, Exchange)
);

CREATE TABLE NewsSources (
	Code TEXT PRIMARY KEY,
	Name TEXT NOT NULL
);

CREATE TABLE News (
	Id        INTEGER PRIMARY KEY,
	Headline  TEXT NOT NULL,
	Source    TEXT NOT NULL REFERENCES NewsSources (Code),
	Published DATETIME NOT NULL,
	Codes     TEXT -- the security codes the item is about, comma-separated
);

CREATE TABLE Account (
	AccountId   TEXT PRIMARY KEY,
	Owner       TEXT NOT NULL CHECK (length(Owner) > 0),
	Name        TEXT NOT NULL,
	Currency    TEXT NOT NULL,
	Balance     DECIMAL(14, 2) NOT NULL DEFAULT 0,
	InternalRef TEXT,
	UNIQUE (AccountId, Owner)
);

-- An order's account must belong to the order's owner: the foreign key on
-- (AccountId, Owner) refuses an order into another user's account.
CREATE TABLE "Order" (
	OrderId     INTEGER PRIMARY KEY AUTOINCREMENT,
	Owner       TEXT NOT NULL CHECK (length(Owner) > 0),
	AccountId   TEXT NOT NULL,
	Code        TEXT NOT NULL,
	Exchange    TEXT NOT NULL,
	Side        TEXT NOT NULL CHECK (Side IN ('Buy', 'Sell')),
	Quantity    INTEGER NOT NULL CHECK (Quantity > 0),
	Price       DECIMAL(12, 4) CHECK (Price IS NULL OR Price > 0),
	Status      TEXT NOT NULL DEFAULT 'Working',
	Created     DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
	RoutingNote TEXT,
	FOREIGN KEY (AccountId, Owner) REFERENCES Account (AccountId, Owner),
	FOREIGN KEY (Code, Exchange) REFERENCES Security (Code, Exchange)
);

INSERT INTO Market (Code, Name, Country) VALUES
	('ASX', 'Australian Securities Exchange', 'Australia'),
	('NZX', 'New Zealand''s Exchange', 'New Zealand'),
	('NYSE', 'New York Stock Exchange', 'United States'),
	('LSE', 'London Stock Exchange', 'United Kingdom');

INSERT INTO Security (Code, Exchange, Name, LastPrice, Currency, Volume, Updated) VALUES
	('BHP', 'ASX', 'BHP Group Limited', 37.48, 'AUD', 8734512, '2026-11-21T10:30:00Z'),
	('CBA', 'ASX', 'Commonwealth Bank of Australia', '152.3000', 'AUD', 2104877, '2026-11-21T10:30:05Z'),
	('CSL', 'ASX', 'CSL Limited', 285.4, 'AUD', 611203, '2026-11-21T10:29:58Z'),
	('NAB', 'ASX', 'National Australia Bank Limited', 37.85, 'AUD', 4409121, '2026-11-21T10:30:01Z'),
	('WBC', 'ASX', 'Westpac Banking Corporation', 31.2, 'AUD', 5120344, '2026-11-21T10:30:02Z'),
	('WES', 'ASX', 'Wesfarmers Limited', 72.15, 'AUD', 1288760, '2026-11-21T10:29:55Z'),
	('ANZ', 'ASX', 'ANZ Group Holdings Limited', 29.64, 'AUD', 4877012, '2026-11-21T10:30:03Z'),
	('MQG', 'ASX', 'Macquarie Group Limited', 214.9, 'AUD', 702118, '2026-11-21T10:29:40Z'),
	('WOW', 'ASX', 'Woolworths Group Limited', 31.07, 'AUD', 2201456, '2026-11-21T10:29:59Z'),
	('TLS', 'ASX', 'Telstra Group Limited', 4.02, 'AUD', 21345009, '2026-11-21T10:30:04Z'),
	('RIO', 'ASX', 'Rio Tinto Limited', 118.76, 'AUD', 1503322, '2026-11-21T10:30:00Z'),
	('FMG', 'ASX', 'Fortescue Ltd', 19.83, 'AUD', 6012388, '2026-11-21T10:29:57Z'),
	('WDS', 'ASX', 'Woodside Energy Group Ltd', 24.51, 'AUD', 3390412, '2026-11-21T10:30:02Z'),
	('TCL', 'ASX', 'Transurban Group', 13.29, 'AUD', 2750090, '2026-11-21T10:29:50Z'),
	('GMG', 'ASX', 'Goodman Group', 33.6, 'AUD', 1990234, '2026-11-21T10:29:52Z'),
	('QAN', 'ASX', 'Qantas Airways Limited', 9.87, 'AUD', 5320011, '2026-11-21T10:30:01Z'),
	('COL', 'ASX', 'Coles Group Limited', 18.92, 'AUD', 2011843, '2026-11-21T10:29:49Z'),
	('XRO', 'ASX', 'Xero Limited', 165.05, 'AUD', 410233, '2026-11-21T10:29:45Z'),
	-- Made-up securities whose names exercise the pattern rules of LIKE, BEGINS and
	-- CONTAINS: '%', '_', '*', '\', quotes, mixed case.
	('PCT', 'ASX', '100% Renewables Fund', 1.235, 'AUD', 120500, '2026-11-21T10:20:00Z'),
	('USC', 'ASX', 'Under_Score Capital Ltd', 0.845, 'AUD', 98000, '2026-11-21T10:21:00Z'),
	('OBR', 'ASX', 'O''Brien Mining NL', 0.0725, 'AUD', 2500000, '2026-11-21T10:22:00Z'),
	('QTE', 'ASX', 'The "Quoted" Company Limited', 2.5, 'AUD', 40100, '2026-11-21T10:23:00Z'),
	('MXC', 'ASX', 'mIxEd CaSe Technologies', 7.7, 'AUD', 15000, '2026-11-21T10:24:00Z'),
	('AST', 'ASX', 'Asterisk * Media Group', 0.31, 'AUD', 770000, '2026-11-21T10:25:00Z'),
	('BSL', 'ASX', 'Back\Slash Resources', 0.155, 'AUD', 330000, '2026-11-21T10:26:00Z'),
	('BHPX', 'ASX', 'bhp lookalike Exploration', 0.02, 'AUD', 10000, '2026-11-21T10:27:00Z'),
	-- The same code on other markets.
	('BHP', 'NYSE', 'BHP Group Limited ADR', 49.12, 'USD', 2213400, '2026-11-20T21:00:00Z'),
	('AIR', 'NZX', 'Air New Zealand Limited', 0.565, 'NZD', 1800230, '2026-11-21T04:00:00Z'),
	('FPH', 'NZX', 'Fisher & Paykel Healthcare Corporation Limited', 35.2, 'NZD', 390045, '2026-11-21T04:00:00Z'),
	('SPK', 'NZX', 'Spark New Zealand Limited', 2.62, 'NZD', 2875410, '2026-11-21T04:00:00Z'),
	('MEL', 'NZX', 'Meridian Energy Limited', 5.61, 'NZD', 1432077, '2026-11-21T04:00:00Z'),
	('RIO', 'LSE', 'Rio Tinto plc', 49.765, 'GBP', 3011202, '2026-11-21T16:30:00Z');

INSERT INTO NewsSources (Code, Name) VALUES
	('ASXA', 'ASX Company Announcements'),
	('WIRE', 'Demo Newswire');

INSERT INTO News (Id, Headline, Source, Published, Codes) VALUES
	(1, 'BHP lifts iron ore guidance by 5%', 'ASXA', '2026-11-21T08:15:00Z', 'BHP'),
	(2, 'Miners rally as iron ore tops $110', 'WIRE', '2026-11-21T09:02:00Z', 'BHP,RIO,FMG'),
	(3, 'CBA first-quarter trading update', 'ASXA', '2026-11-20T22:30:00Z', 'CBA'),
	(4, 'Banks steady ahead of the RBA''s decision', 'WIRE', '2026-11-21T00:45:00Z', 'CBA,NAB,WBC,ANZ'),
	(5, 'Qantas flags "strong" holiday demand', 'WIRE', '2026-11-20T23:10:00Z', 'QAN'),
	(6, 'CSL announces on-market buy-back', 'ASXA', '2026-11-21T07:55:00Z', 'CSL'),
	(7, 'Xero: half-year results', 'ASXA', '2026-11-20T21:05:00Z', 'XRO'),
	(8, 'Market wrap: ASX 200 up 0.4%', 'WIRE', '2026-11-21T06:10:00Z', NULL);

INSERT INTO Account (AccountId, Owner, Name, Currency, Balance, InternalRef) VALUES
	('DEMO-100001', '5d1c6f2e-8a4b-4c1e-9f3a-2b7d8e6c4a10', 'Demo User', 'AUD', 25000, 'CRM-77813'),
	('TRD-200001', 'a3e8b7d4-2c6f-4e91-b5d0-7f1a9c3e6b28', 'Demo Trader', 'AUD', 150000.75, 'CRM-88120'),
	('TRD-200002', 'a3e8b7d4-2c6f-4e91-b5d0-7f1a9c3e6b28', 'Demo Trader (USD)', 'USD', 40000.5, 'CRM-88121'),
	('DESK-300001', 'demo-trading-desk', 'Demo Trading Desk', 'AUD', 500000, 'CRM-99001');

INSERT INTO "Order" (OrderId, Owner, AccountId, Code, Exchange, Side, Quantity, Price, Status, Created, RoutingNote) VALUES
	(1, '5d1c6f2e-8a4b-4c1e-9f3a-2b7d8e6c4a10', 'DEMO-100001', 'BHP', 'ASX', 'Buy', 100, 37.4, 'Filled', '2026-11-20T23:05:00Z', 'desk=retail'),
	(2, '5d1c6f2e-8a4b-4c1e-9f3a-2b7d8e6c4a10', 'DEMO-100001', 'TLS', 'ASX', 'Buy', 2000, 4, 'Working', '2026-11-21T00:12:00Z', 'desk=retail'),
	(3, 'a3e8b7d4-2c6f-4e91-b5d0-7f1a9c3e6b28', 'TRD-200001', 'CBA', 'ASX', 'Buy', 50, 151.9, 'Filled', '2026-11-20T23:01:00Z', 'desk=pro;venue=CXA'),
	(4, 'a3e8b7d4-2c6f-4e91-b5d0-7f1a9c3e6b28', 'TRD-200001', 'BHP', 'ASX', 'Sell', 300, 37.6, 'Working', '2026-11-21T00:30:00Z', 'desk=pro'),
	(5, 'a3e8b7d4-2c6f-4e91-b5d0-7f1a9c3e6b28', 'TRD-200001', 'CSL', 'ASX', 'Buy', 10, NULL, 'Cancelled', '2026-11-21T01:00:00Z', NULL),
	(6, 'a3e8b7d4-2c6f-4e91-b5d0-7f1a9c3e6b28', 'TRD-200002', 'BHP', 'NYSE', 'Buy', 40, 49, 'Working', '2026-11-20T20:45:00Z', 'desk=pro;venue=ARCA');
