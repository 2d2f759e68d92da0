package migrations

// TemplateData is what the SQL files' templates see, for tests that apply SQL
// files of their own (an earlier outboxtop's migrations).
var TemplateData = templateData
