// Stylesheets are imported for the bundler, which emits them as one CSS file beside the script.
declare module '*.css'
