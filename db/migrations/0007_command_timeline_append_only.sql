-- The command timeline is append-only: the database itself refuses to change or remove an entry.
CREATE TRIGGER `command_timeline_no_update` BEFORE UPDATE ON `command_timeline`
BEGIN SELECT RAISE(ABORT, 'command_timeline is append-only'); END;
--> statement-breakpoint
CREATE TRIGGER `command_timeline_no_delete` BEFORE DELETE ON `command_timeline`
BEGIN SELECT RAISE(ABORT, 'command_timeline is append-only'); END;
