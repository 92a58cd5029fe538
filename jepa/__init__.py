"""gymkit subpackage."""
